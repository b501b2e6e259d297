import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { analyzeConflicts, describeConflict, FactCache, isOpenConflict, type ConflictSourceInput } from '../../src/knowledge/conflicts/conflicts';
import { supersedesEdit } from '../../src/knowledge/conflicts/conflictsEdit';
import { applyTextEdit } from '../../src/knowledge/campaign/textEdit';
import { supersededByState, withoutSupersededCanon, worldFactsFromState } from '../../src/knowledge/conflicts/conflictsState';
import { factSourceFromText, type FactSourceMeta } from '../../src/knowledge/conflicts/factsInput';
import { valuesConflict, valueKey } from '../../src/knowledge/conflicts/factsNormalize';
import { EXAMPLE_CAMPAIGN } from '../support/corpora';

const canon = (file: string, text: string, meta: Partial<FactSourceMeta> = {}): ConflictSourceInput =>
  factSourceFromText(file, text, { title: meta.title ?? path.basename(file, '.md'), class: 'canon', ...meta });

const MARA = `---
title: Sister Mara
entities: [Mara, Sister Mara]
---
# Sister Mara

- **Age:** 34
- **Role:** Keeper of the Old Abbey's infirmary
- **Home:** the Old Abbey
`;

describe('canon conflicts: deterministic detection', () => {
  it('finds no conflict in the example campaign, whose canon agrees with itself', () => {
    const sources = ['canon.md', 'rules.md', 'characters/mara.md', 'characters/brother-aldric.md', 'places/old-abbey.md'].map((file) => {
      return factSourceFromText(file, fs.readFileSync(path.join(EXAMPLE_CAMPAIGN, file), 'utf8'), { class: 'canon' });
    });
    const analysis = analyzeConflicts(sources);
    assert.deepEqual(
      analysis.facts.map((f) => `${f.path}:${f.line} ${f.entityKey}.${f.attributeKey}=${f.valueKey}`),
      ['characters/mara.md:8 sister mara.age=34', 'characters/mara.md:9 sister mara.role=keeper of the old abbeys infirmary', 'characters/mara.md:10 sister mara.home=old abbey'],
    );
    assert.deepEqual(analysis.conflicts, []);
  });

  it('pairs statements about one entity through its aliases, case and diacritics, in every recognised shape', () => {
    const bible = canon(
      'bible.md',
      ['# Westhaven', '', '## MÁRA', '**Age**: forty-one', 'Home: Westhaven', '', '## Ages', '- Sister Mara: 34', '', '| Name | Hair |', '|---|---|', '| mara | black |'].join('\n'),
      { title: 'Westhaven Setting Bible', entities: ['Westhaven'] },
    );
    const notes = canon('notes.md', ['---', 'facts:', '  Mara:', '    hair: grey', '---', 'Eyes', ': green'].join('\n'), { title: 'Notes' });
    const analysis = analyzeConflicts([canon('characters/mara.md', MARA, { title: 'Sister Mara', entities: ['Mara', 'Sister Mara'] }), bible, notes]);
    assert.deepEqual(analysis.conflicts.map(describeConflict), [
      'Sister Mara — Age: "forty-one" (bible.md:4) vs "34" (characters/mara.md:7)',
      'Sister Mara — Home: "Westhaven" (bible.md:5) vs "the Old Abbey" (characters/mara.md:9)',
      // The bible contradicts itself too: its "Ages" list disagrees with its own sheet for Mara.
      'Sister Mara — Age: "34" (bible.md:8) vs "forty-one" (bible.md:4)',
      'Sister Mara — Hair: "black" (bible.md:12) vs "grey" (notes.md:4)',
    ]);
    // `- Sister Mara: 34` under "Ages" restates the sheet's age: agreeing statements are not conflicts.
    const ages = analysis.statementsAbout('sister mara', 'age');
    assert.deepEqual(ages.map((s) => `${s.path}:${s.line} ${s.shape}`), ['characters/mara.md:7 attribute-line', 'bible.md:4 attribute-line', 'bible.md:8 entity-list']);
    // The "Eyes / : green" definition is about the notes' own subject, not Mara: no pair with anything.
    assert.equal(analysis.statementsAt('notes.md', 7)[0]?.entityKey, 'notes');
  });

  it('treats restatements as agreement and reports real disagreements', () => {
    const same = (a: string, b: string) => !valuesConflict(valueKey(a), valueKey(b));
    assert.ok(same('34', '34 years old'));
    assert.ok(same('Thirty-four', '34'));
    assert.ok(same('Captain Ilse Varra', 'Ilse Varra'));
    assert.ok(same('the Old Abbey', 'Old Abbéy'));
    assert.ok(same('grey', 'Gray'));
    assert.ok(!same('alive', 'not alive'));
    assert.ok(!same('34', '35'));
    assert.ok(!same('grey', 'green'));
  });

  it('ignores prose, code, reference sources, dialogue scripts and remarks', () => {
    const text = [
      '# Mara',
      'She said it plainly. Mara said:',
      'Age: 90',
      '',
      '```',
      'Age: 12',
      '```',
      '',
      '## Scene',
      '- Mara: I will go.',
      '- Mara: I will stay.',
      '',
      'Note: her age is disputed.',
    ].join('\n');
    const analysis = analyzeConflicts([
      canon('characters/mara.md', MARA, { title: 'Sister Mara', entities: ['Mara', 'Sister Mara'] }),
      canon('story.md', text, { title: 'Story' }),
      factSourceFromText('srd.md', '# Mara\n- **Age:** 300\n', { title: 'SRD', class: 'reference' }),
    ]);
    assert.deepEqual(analysis.facts.filter((f) => f.path !== 'characters/mara.md'), []);
    assert.deepEqual(analysis.conflicts, []);
  });

  it('pairs headings across files only through declared names: generic headings stay within their file', () => {
    // The SRD lesson: every class file has "### Hit Points" with its own "Hit Dice"; they are not one entity.
    const barbarian = canon('classes/barbarian.md', '# Barbarian\n\n### Hit Points\n\n**Hit Dice:** 1d12 per barbarian level\n', { title: 'Barbarian' });
    const bard = canon('classes/bard.md', '# Bard\n\n### Hit Points\n\n**Hit Dice:** 1d8 per bard level\n', { title: 'Bard' });
    assert.deepEqual(analyzeConflicts([barbarian, bard]).conflicts, []);
    const titled = canon('places/hit-points.md', '- **Hit Dice:** 1d6\n', { title: 'Hit Points' });
    assert.equal(analyzeConflicts([barbarian, bard, titled]).conflicts.length, 3, 'once a source declares the name, every heading of it is that entity');
  });

  it('re-extracts only the sources whose text changed when a cache is kept', () => {
    const cache = new FactCache();
    const mara = canon('characters/mara.md', MARA, { title: 'Sister Mara', entities: ['Mara', 'Sister Mara'] });
    const bible = canon('bible.md', '# Mara\n- Age: 41\n', { title: 'Bible' });
    const first = analyzeConflicts([mara, bible], new Map(), cache);
    const edited = canon('bible.md', '# Mara\n- Age: 34\n', { title: 'Bible' });
    const second = analyzeConflicts([{ ...mara }, edited], new Map(), cache);
    assert.equal(first.conflicts.length, 1);
    assert.equal(second.conflicts.length, 0);
    assert.equal(second.facts[0], first.facts[0], 'the unchanged file kept its facts');
    assert.notEqual(second.facts.at(-1), first.facts.at(-1));
  });

  it('keys a conflict by what disagrees, not by where the line sits, so an ignore survives edits around it', () => {
    const other = (prefix: string) => canon('bible.md', `${prefix}# Mara\n- Age: 41\n`, { title: 'Bible' });
    const sources = (prefix: string) => [canon('characters/mara.md', MARA, { title: 'Sister Mara', entities: ['Mara', 'Sister Mara'] }), other(prefix)];
    const first = analyzeConflicts(sources(''));
    const moved = analyzeConflicts(sources('Intro.\n\n'));
    assert.equal(first.conflicts.length, 1);
    assert.equal(moved.conflicts[0]!.key, first.conflicts[0]!.key);
    assert.notEqual(moved.conflicts[0]!.a.line, first.conflicts[0]!.a.line);
    const ignored = analyzeConflicts(sources(''), new Map([[first.conflicts[0]!.key, 'ignored']]));
    assert.equal(ignored.conflicts[0]!.decision, 'ignored');
    assert.equal(ignored.openConflicts.length, 0);
    const changedValue = analyzeConflicts([sources('')[0]!, canon('bible.md', '# Mara\n- Age: 50\n', { title: 'Bible' })], new Map([[first.conflicts[0]!.key, 'ignored']]));
    assert.equal(changedValue.openConflicts.length, 1, 'a new value is a new disagreement');
  });

  it('marks a pair resolved when one source supersedes the other, directly or through a chain', () => {
    const old = canon('old.md', '# Mara\n- Age: 30\n', { title: 'Old' });
    const mid = canon('mid.md', '---\nsupersedes: [old.md]\n---\n# Mara\n- Age: 32\n', { title: 'Mid' });
    const edit = supersedesEdit(MARA, 'mid.md')!;
    const newest = canon('characters/mara.md', applyTextEdit(MARA, edit), { title: 'Sister Mara', entities: ['Mara', 'Sister Mara'] });
    const analysis = analyzeConflicts([old, mid, newest]);
    assert.equal(analysis.conflicts.length, 3);
    assert.deepEqual(
      analysis.conflicts.map((c) => `${c.a.path}/${c.b.path} won by ${c.supersededBy && c[c.supersededBy].path}`),
      ['characters/mara.md/mid.md won by characters/mara.md', 'characters/mara.md/old.md won by characters/mara.md', 'mid.md/old.md won by mid.md'],
    );
    assert.ok(analysis.conflicts.every((c) => !isOpenConflict(c)));
    assert.deepEqual(
      [...analysis.supersededBy].map(([loser, winners]) => `${loser} by ${[...winners].sort().join(', ')}`).sort(),
      ['mid.md by characters/mara.md', 'old.md by characters/mara.md, mid.md'],
      'the superseded sources, each with every source that supersedes it (the graph fades what only they define)',
    );
  });
});

describe('mark as superseding: the front matter edit', () => {
  const apply = (text: string, target: string) => {
    const edit = supersedesEdit(text, target);
    return edit ? applyTextEdit(text, edit) : null;
  };

  it('adds the key before the closing fence and leaves every other byte alone', () => {
    const out = apply(MARA, 'canon.md')!;
    assert.equal(out, MARA.replace('entities: [Mara, Sister Mara]\n', 'entities: [Mara, Sister Mara]\nsupersedes:\n  - canon.md\n'));
  });

  it('appends to a block list keeping its indentation, extends a flow list, and is idempotent', () => {
    const block = '---\ntitle: X # keep me\nsupersedes:\n    - a.md\n    - "b c.md"\ntags: [x]\n---\nBody\n';
    assert.equal(apply(block, 'd.md'), block.replace('    - "b c.md"\n', '    - "b c.md"\n    - d.md\n'));
    const flow = '---\nsupersedes: [a.md]\n---\n';
    assert.equal(apply(flow, 'places/x.md'), '---\nsupersedes: [a.md, places/x.md]\n---\n');
    assert.equal(apply(flow, 'a.md'), null);
    assert.equal(apply('---\nsupersedes: a.md\n---\n', 'b.md'), '---\nsupersedes: [a.md, b.md]\n---\n');
  });

  it('creates front matter when there is none, keeps CRLF files CRLF, and refuses broken YAML', () => {
    assert.equal(apply('# Title\n', 'a.md'), '---\nsupersedes:\n  - a.md\n---\n# Title\n');
    assert.equal(apply('---\r\ntitle: X\r\n---\r\nBody\r\n', 'a.md'), '---\r\ntitle: X\r\nsupersedes:\r\n  - a.md\r\n---\r\nBody\r\n');
    assert.throws(() => supersedesEdit('---\ntitle: [unclosed\n---\n', 'a.md'), /front matter is not valid YAML/);
  });
});

describe('canon versus the story as played', () => {
  const bridgeCanon = canon('places/bridge.md', '# The Old Bridge\n\n- **Status:** standing\n- **Length:** forty yards\n\nIt spans the river.\n', {
    title: 'The Old Bridge',
    entities: ['Old Bridge', 'the bridge'],
  });
  const analysis = analyzeConflicts([bridgeCanon, canon('characters/mara.md', MARA, { title: 'Sister Mara', entities: ['Mara', 'Sister Mara'] })]);

  it('supersedes the canon condition the state contradicts, and only that', () => {
    const state = worldFactsFromState({ 'world.bridge': 'destroyed', 'npc.mara.age': 34, 'flags.alarm': true }, { mara: 'Mara' });
    const superseded = supersededByState(analysis.facts, state, analysis.names);
    assert.deepEqual(superseded.map((s) => `${s.statement.entityKey}.${s.statement.attributeKey}: ${s.statement.value} → ${s.current.value}`), [
      'old bridge.statu: standing → destroyed',
    ]);
  });

  it('rewrites the stale line of a passage so it is not re-asserted as current truth', () => {
    const superseded = supersededByState(analysis.facts, [{ entity: 'the bridge', value: 'destroyed' }], analysis.names);
    const passage = { sourcePath: 'places/bridge.md', text: '- **Status:** standing\n- **Length:** forty yards\n\nIt spans the river.' };
    const out = withoutSupersededCanon(passage, superseded);
    assert.equal(out.text, '- Status: superseded in play — now destroyed\n- **Length:** forty yards\n\nIt spans the river.');
    assert.equal(out.replaced.length, 1);
    assert.equal(withoutSupersededCanon({ sourcePath: 'other.md', text: passage.text }, superseded).text, passage.text);
    const indexed = { sourcePath: 'places/bridge.md', text: '- Status: standing\n- Length: forty yards' };
    assert.equal(withoutSupersededCanon(indexed, superseded).text, '- Status: superseded in play — now destroyed\n- Length: forty yards', 'as the index keeps it, markup removed');
  });
});
