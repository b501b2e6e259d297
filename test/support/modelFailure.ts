import assert from 'node:assert/strict';
import { ModelServerError } from '../../src/models';

/** The typed failure a model call must end in; a call that succeeds fails the test. */
export async function failure(promise: Promise<unknown>): Promise<ModelServerError> {
  try {
    await promise;
  } catch (error) {
    assert.ok(error instanceof ModelServerError, `a typed failure, not ${String(error)}`);
    return error;
  }
  assert.fail('the reply should have failed');
}
