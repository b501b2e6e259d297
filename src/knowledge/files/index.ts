// Files: the one writer of every file the product writes (whole or not at all, a set all or nothing), the
// lock files that make one holder at a time, and the process that owns something.
export { WriteConflictError, createFile, finishInterruptedWrites, replaceFile, shortPath, withWriteLock, writeFailure, writeFileSet } from './writer';
export type { FinishedWrites, SetFile } from './writer';
export { withFileLock } from './fileLock';
export type { LockWaitOptions } from './fileLock';
export { THIS_PROCESS, parseProcessOwner, processOwnerAlive } from './processOwner';
export type { ProcessOwner } from './processOwner';
