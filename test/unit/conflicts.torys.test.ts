import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { analyzeConflicts, type CanonConflict } from '../../src/knowledge/conflicts/conflicts';
import { factSourceFromText } from '../../src/knowledge/conflicts/factsInput';
import { corpusPath } from '../support/corpora';

/**
 * Precision and recall of deterministic detection on real material. The Torys setting bible describes
 * its people and places across several files but states no facts in a recognisable shape; a writer's
 * edits add fact sheets, tables and lists to copies, some restating each other and some contradicting.
 * The ground truth is the writer's intent (`meaning`), not the detector's normalization, so paraphrases
 * the detector cannot see through count against it, and prose contradictions count as misses.
 */

interface Planted {
  id: string;
  file: string;
  entity: string;
  attribute: string;
  /** Statements with the same meaning agree; different meanings about the same entity+attribute conflict. */
  meaning: string;
  /** The exact line as it appears in the edited file (located by search). */
  line: string;
  canon?: false;
}

const DE = 'world/tumulted-sea/andal/days-end';
const SI = 'world/tumulted-sea/sibal';
const BE = 'world/oro-oro-ponoro-poron/bekebel';

/** Front matter lines added after `title:` — declared aliases and facts maps, as a writer would add them. */
const FRONT_MATTER: Record<string, string[]> = {
  [`${BE}/babanak-the-great.md`]: ['entities: [Babanak]'],
  [`${BE}/tantan-the-inventor.md`]: ['entities: [Tantan]'],
  ['world/oro-oro-ponoro-poron/dragons/tuvdak-the-magnificent.md']: ['entities: [Tuvdak]'],
  [`${SI}/index.md`]: ['facts:', '  population: 200,000', '  Lord Chewan:', '    hair: gray'],
  [`${DE}/index.md`]: ['facts:', '  population: 800'],
};

const APPENDED: Record<string, string[]> = {
  [`${DE}/ahahbu.md`]: ['## Quick facts', '', "- **Role:** healer of Day's End", '- **Age:** 52'],
  [`${DE}/index.md`]: [
    '## Notable residents',
    '',
    '| Name | Role | Age |',
    '|---|---|---|',
    '| Ahahbu | healer | 61 |',
    '| Lord Tayossa | judge | 47 |',
    '| Usen | blacksmith | 58 years old |',
  ],
  [`${DE}/lord-tayossa.md`]: ['## Quick facts', '', "- **Role:** resident judge of Day's End", '- **Age:** forty-seven'],
  [`${DE}/usen.md`]: ['## Quick facts', '', "- **Role:** mayor of Day's End", '- **Age:** 58'],
  [`${DE}/mayoral-seat.md`]: ["## Day's End", '', 'Population: 800', 'Walls: 25-foot stone'],
  [`${DE}/dungeon.md`]: ['## Day’s End', '', '- Walls: 40-foot stone'],
  [`${SI}/lord-calas.md`]: ['## Quick facts', '', '- **Race:** elf', '- **Reign:** nearly a century', '', '## Sibal', '', '- **Population:** half a million'],
  [`${SI}/index.md`]: [
    '## Lord Calas',
    '',
    '**Race**: half-elf',
    '**Reign**: almost a hundred years',
    '',
    '## Office',
    '',
    '- Lord Chewan: harbourmaster',
    '',
    '## Chewan',
    '',
    '- Ship: the Heron',
  ],
  [`${SI}/lord-chewan.md`]: ['## Quick facts', '', '- **Office:** harbourmaster of Trapwater Bay', '- **Hair:** grey', '- **Ship:** the Gull'],
  [`${BE}/babanak-the-great.md`]: ['## Quick facts', '', '- **Years of rule:** 59', '- **Mother:** Gava the Supreme', '- **Age:** 90'],
  [`${BE}/index.md`]: [
    '## Babanak',
    '',
    '- **Years of rule:** fifty-nine',
    '- **Mother:** Gava',
    '',
    '## Ages',
    '',
    '- Babanak the Great: 85',
    '',
    '## Tantan',
    '',
    '- **Students:** twelve',
    '',
    'Tantan still runs her shop every day.',
  ],
  [`${BE}/tantan-the-inventor.md`]: ['## Quick facts', '', '- **Sister:** Janjan the Uncowed', '- **Students:** eight', '- **Status:** retired', '', '## Janjan the Uncowed', '', '- **Clan:** Bekebel'],
  ['world/oro-oro-ponoro-poron/perexel/janjan-the-uncowed.md']: ['## Quick facts', '', '- **Clan:** Perexel', '', '## Tantan', '', '- **Sister:** Janjan'],
  ['world/oro-oro-ponoro-poron/dragons/tuvdak-the-magnificent.md']: ['## Quick facts', '', '- **Age:** over 600 years', '- **Breath:** fire'],
  ['world/oro-oro-ponoro-poron/dragons/ice.md']: ['## Tuvdak the Magnificent', '', '- **Breath:** ice'],
  ['stories/tuvdaks-gift.md']: ['## Tuvdak', '', '- Age: 600'],
  ['world/tumulted-sea/leuber/index.md']: ['## Cities', '', '| City | Leader |', '|---|---|', '| Firecomb | Lord Chewan |'],
  ['world/tumulted-sea/leuber/firecomb.md']: ['## Quick facts', '', '- **Leader:** Lady Tenuri'],
  // Distractors: a Reference almanac disagrees (never a conflict) and a story scene scripts dialogue.
  ['reference/almanac.md']: ['---', 'title: Almanac of Andal', '---', '## Ahahbu', '', '- **Age:** 70'],
  ['stories/nightfall.md']: ['## Ahahbu', '', 'Ahahbu: Hold still.', 'Ahahbu: This will sting.'],
};

const PLANTED: Planted[] = [
  { id: 'ahahbu-role-sheet', file: `${DE}/ahahbu.md`, entity: 'ahahbu', attribute: 'role', meaning: 'healer', line: "- **Role:** healer of Day's End" },
  { id: 'ahahbu-role-table', file: `${DE}/index.md`, entity: 'ahahbu', attribute: 'role', meaning: 'healer', line: '| Ahahbu | healer | 61 |' },
  { id: 'ahahbu-age-sheet', file: `${DE}/ahahbu.md`, entity: 'ahahbu', attribute: 'age', meaning: '52', line: '- **Age:** 52' },
  { id: 'ahahbu-age-table', file: `${DE}/index.md`, entity: 'ahahbu', attribute: 'age', meaning: '61', line: '| Ahahbu | healer | 61 |' },
  { id: 'ahahbu-age-almanac', file: 'reference/almanac.md', entity: 'ahahbu', attribute: 'age', meaning: '70', line: '- **Age:** 70', canon: false },
  { id: 'tayossa-role-sheet', file: `${DE}/lord-tayossa.md`, entity: 'tayossa', attribute: 'role', meaning: 'judge', line: "- **Role:** resident judge of Day's End" },
  { id: 'tayossa-role-table', file: `${DE}/index.md`, entity: 'tayossa', attribute: 'role', meaning: 'judge', line: '| Lord Tayossa | judge | 47 |' },
  { id: 'tayossa-age-sheet', file: `${DE}/lord-tayossa.md`, entity: 'tayossa', attribute: 'age', meaning: '47', line: '- **Age:** forty-seven' },
  { id: 'tayossa-age-table', file: `${DE}/index.md`, entity: 'tayossa', attribute: 'age', meaning: '47', line: '| Lord Tayossa | judge | 47 |' },
  { id: 'usen-role-sheet', file: `${DE}/usen.md`, entity: 'usen', attribute: 'role', meaning: 'mayor', line: "- **Role:** mayor of Day's End" },
  { id: 'usen-role-table', file: `${DE}/index.md`, entity: 'usen', attribute: 'role', meaning: 'blacksmith', line: '| Usen | blacksmith | 58 years old |' },
  { id: 'usen-age-sheet', file: `${DE}/usen.md`, entity: 'usen', attribute: 'age', meaning: '58', line: '- **Age:** 58' },
  { id: 'usen-age-table', file: `${DE}/index.md`, entity: 'usen', attribute: 'age', meaning: '58', line: '| Usen | blacksmith | 58 years old |' },
  { id: 'daysend-pop-fm', file: `${DE}/index.md`, entity: 'daysend', attribute: 'population', meaning: '800', line: '  population: 800' },
  { id: 'daysend-pop-seat', file: `${DE}/mayoral-seat.md`, entity: 'daysend', attribute: 'population', meaning: '800', line: 'Population: 800' },
  { id: 'daysend-walls-seat', file: `${DE}/mayoral-seat.md`, entity: 'daysend', attribute: 'walls', meaning: '25ft', line: 'Walls: 25-foot stone' },
  { id: 'daysend-walls-dungeon', file: `${DE}/dungeon.md`, entity: 'daysend', attribute: 'walls', meaning: '40ft', line: '- Walls: 40-foot stone' },
  { id: 'calas-race-sheet', file: `${SI}/lord-calas.md`, entity: 'calas', attribute: 'race', meaning: 'elf', line: '- **Race:** elf' },
  { id: 'calas-race-sibal', file: `${SI}/index.md`, entity: 'calas', attribute: 'race', meaning: 'half-elf', line: '**Race**: half-elf' },
  { id: 'calas-reign-sheet', file: `${SI}/lord-calas.md`, entity: 'calas', attribute: 'reign', meaning: 'century', line: '- **Reign:** nearly a century' },
  { id: 'calas-reign-sibal', file: `${SI}/index.md`, entity: 'calas', attribute: 'reign', meaning: 'century', line: '**Reign**: almost a hundred years' },
  { id: 'sibal-pop-fm', file: `${SI}/index.md`, entity: 'sibal', attribute: 'population', meaning: '200k', line: '  population: 200,000' },
  { id: 'sibal-pop-calas', file: `${SI}/lord-calas.md`, entity: 'sibal', attribute: 'population', meaning: '500k', line: '- **Population:** half a million' },
  { id: 'chewan-office-sheet', file: `${SI}/lord-chewan.md`, entity: 'chewan', attribute: 'office', meaning: 'harbourmaster', line: '- **Office:** harbourmaster of Trapwater Bay' },
  { id: 'chewan-office-list', file: `${SI}/index.md`, entity: 'chewan', attribute: 'office', meaning: 'harbourmaster', line: '- Lord Chewan: harbourmaster' },
  { id: 'chewan-hair-sheet', file: `${SI}/lord-chewan.md`, entity: 'chewan', attribute: 'hair', meaning: 'grey', line: '- **Hair:** grey' },
  { id: 'chewan-hair-fm', file: `${SI}/index.md`, entity: 'chewan', attribute: 'hair', meaning: 'grey', line: '    hair: gray' },
  { id: 'chewan-ship-sheet', file: `${SI}/lord-chewan.md`, entity: 'chewan', attribute: 'ship', meaning: 'gull', line: '- **Ship:** the Gull' },
  // "Chewan" is not a declared alias of Lord Chewan: out of reach by design.
  { id: 'chewan-ship-sibal', file: `${SI}/index.md`, entity: 'chewan', attribute: 'ship', meaning: 'heron', line: '- Ship: the Heron' },
  { id: 'babanak-rule-sheet', file: `${BE}/babanak-the-great.md`, entity: 'babanak', attribute: 'rule', meaning: '59', line: '- **Years of rule:** 59' },
  { id: 'babanak-rule-index', file: `${BE}/index.md`, entity: 'babanak', attribute: 'rule', meaning: '59', line: '- **Years of rule:** fifty-nine' },
  { id: 'babanak-mother-sheet', file: `${BE}/babanak-the-great.md`, entity: 'babanak', attribute: 'mother', meaning: 'gava', line: '- **Mother:** Gava the Supreme' },
  { id: 'babanak-mother-index', file: `${BE}/index.md`, entity: 'babanak', attribute: 'mother', meaning: 'gava', line: '- **Mother:** Gava' },
  { id: 'babanak-age-sheet', file: `${BE}/babanak-the-great.md`, entity: 'babanak', attribute: 'age', meaning: '90', line: '- **Age:** 90' },
  { id: 'babanak-age-list', file: `${BE}/index.md`, entity: 'babanak', attribute: 'age', meaning: '85', line: '- Babanak the Great: 85' },
  { id: 'tantan-students-sheet', file: `${BE}/tantan-the-inventor.md`, entity: 'tantan', attribute: 'students', meaning: '8', line: '- **Students:** eight' },
  { id: 'tantan-students-index', file: `${BE}/index.md`, entity: 'tantan', attribute: 'students', meaning: '12', line: '- **Students:** twelve' },
  { id: 'tantan-status-sheet', file: `${BE}/tantan-the-inventor.md`, entity: 'tantan', attribute: 'status', meaning: 'retired', line: '- **Status:** retired' },
  // A contradiction stated in prose: only the model-assisted check can see it.
  { id: 'tantan-status-prose', file: `${BE}/index.md`, entity: 'tantan', attribute: 'status', meaning: 'working', line: 'Tantan still runs her shop every day.' },
  { id: 'tantan-sister-sheet', file: `${BE}/tantan-the-inventor.md`, entity: 'tantan', attribute: 'sister', meaning: 'janjan', line: '- **Sister:** Janjan the Uncowed' },
  { id: 'tantan-sister-janjan', file: 'world/oro-oro-ponoro-poron/perexel/janjan-the-uncowed.md', entity: 'tantan', attribute: 'sister', meaning: 'janjan', line: '- **Sister:** Janjan' },
  { id: 'janjan-clan-sheet', file: 'world/oro-oro-ponoro-poron/perexel/janjan-the-uncowed.md', entity: 'janjan', attribute: 'clan', meaning: 'perexel', line: '- **Clan:** Perexel' },
  { id: 'janjan-clan-tantan', file: `${BE}/tantan-the-inventor.md`, entity: 'janjan', attribute: 'clan', meaning: 'bekebel', line: '- **Clan:** Bekebel' },
  { id: 'tuvdak-age-sheet', file: 'world/oro-oro-ponoro-poron/dragons/tuvdak-the-magnificent.md', entity: 'tuvdak', attribute: 'age', meaning: '600+', line: '- **Age:** over 600 years' },
  { id: 'tuvdak-age-story', file: 'stories/tuvdaks-gift.md', entity: 'tuvdak', attribute: 'age', meaning: '600+', line: '- Age: 600' },
  { id: 'tuvdak-breath-sheet', file: 'world/oro-oro-ponoro-poron/dragons/tuvdak-the-magnificent.md', entity: 'tuvdak', attribute: 'breath', meaning: 'fire', line: '- **Breath:** fire' },
  { id: 'tuvdak-breath-ice', file: 'world/oro-oro-ponoro-poron/dragons/ice.md', entity: 'tuvdak', attribute: 'breath', meaning: 'ice', line: '- **Breath:** ice' },
  { id: 'firecomb-leader-sheet', file: 'world/tumulted-sea/leuber/firecomb.md', entity: 'firecomb', attribute: 'leader', meaning: 'tenuri', line: '- **Leader:** Lady Tenuri' },
  { id: 'firecomb-leader-table', file: 'world/tumulted-sea/leuber/index.md', entity: 'firecomb', attribute: 'leader', meaning: 'chewan', line: '| Firecomb | Lord Chewan |' },
];

function copyTree(from: string, to: string): void {
  fs.cpSync(from, to, { recursive: true });
}

function editCopy(root: string): void {
  for (const [file, lines] of Object.entries(FRONT_MATTER)) {
    const full = path.join(root, file);
    const text = fs.readFileSync(full, 'utf8');
    fs.writeFileSync(full, text.replace(/^(title: .*\n)/m, `$1${lines.join('\n')}\n`));
  }
  for (const [file, lines] of Object.entries(APPENDED)) {
    const full = path.join(root, file);
    fs.mkdirSync(path.dirname(full), { recursive: true });
    const before = fs.existsSync(full) ? fs.readFileSync(full, 'utf8').replace(/\n*$/, '\n\n') : '';
    fs.writeFileSync(full, `${before}${lines.join('\n')}\n`);
  }
}

function loadCampaign(root: string) {
  const files = fs.readdirSync(root, { recursive: true, encoding: 'utf8' }).filter((f) => f.endsWith('.md')).map((f) => f.split(path.sep).join('/'));
  return files.sort().map((file) => {
    const text = fs.readFileSync(path.join(root, file), 'utf8');
    return factSourceFromText(file, text, { class: file.startsWith('reference/') ? 'reference' : 'canon' });
  });
}

function lineOf(root: string, planted: Planted): number {
  const lines = fs.readFileSync(path.join(root, planted.file), 'utf8').split('\n');
  const hits = lines.flatMap((l, i) => (l === planted.line ? [i + 1] : []));
  assert.equal(hits.length, 1, `${planted.id}: line must occur once in ${planted.file}`);
  return hits[0]!;
}

describe('canon conflicts on real material (Torys, edited copies)', () => {
  let root: string;
  before(() => {
    root = fs.mkdtempSync(path.join(os.tmpdir(), 'torys-conflicts-'));
  });
  after(() => fs.rmSync(root, { recursive: true, force: true }));

  it('finds nothing in the unedited bible, which states no facts in a recognisable shape', () => {
    copyTree(corpusPath('torys'), path.join(root, 'pristine'));
    const analysis = analyzeConflicts(loadCampaign(path.join(root, 'pristine')));
    assert.deepEqual(analysis.conflicts, []);
  });

  it('detects the planted contradictions with measured precision and recall', () => {
    const campaign = path.join(root, 'edited');
    copyTree(corpusPath('torys'), campaign);
    editCopy(campaign);
    const analysis = analyzeConflicts(loadCampaign(campaign));

    const at = new Map<string, Planted[]>();
    for (const p of PLANTED) {
      const key = `${p.file}:${lineOf(campaign, p)}`;
      at.set(key, [...(at.get(key) ?? []), p]);
    }
    const truth = new Set<string>();
    const canonPlanted = PLANTED.filter((p) => p.canon !== false);
    for (let i = 0; i < canonPlanted.length; i++) {
      for (let j = i + 1; j < canonPlanted.length; j++) {
        const [x, y] = [canonPlanted[i]!, canonPlanted[j]!];
        if (x.entity === y.entity && x.attribute === y.attribute && x.meaning !== y.meaning) truth.add([x.id, y.id].sort().join(' / '));
      }
    }
    const label = (c: CanonConflict): string => {
      const side = (s: CanonConflict['a']) => at.get(`${s.path}:${s.line}`) ?? [];
      for (const x of side(c.a)) for (const y of side(c.b)) {
        const pair = [x.id, y.id].sort().join(' / ');
        if (x.entity === y.entity && x.attribute === y.attribute) return pair;
      }
      return `unplanned: ${c.a.path}:${c.a.line} / ${c.b.path}:${c.b.line}`;
    };
    const detected = new Set(analysis.openConflicts.map(label));
    const truePositives = [...detected].filter((d) => truth.has(d));
    const falsePositives = [...detected].filter((d) => !truth.has(d));
    const misses = [...truth].filter((t) => !detected.has(t));
    const precision = truePositives.length / detected.size;
    const recall = truePositives.length / truth.size;

    console.log(
      `      conflict detection on Torys (${PLANTED.length} planted statements, ${truth.size} true conflicts): ` +
        `precision ${precision.toFixed(2)} (${truePositives.length}/${detected.size}), recall ${recall.toFixed(2)} (${truePositives.length}/${truth.size})`,
    );
    for (const fp of falsePositives) console.log(`        false positive: ${fp}`);
    for (const miss of misses) console.log(`        missed: ${miss}`);

    // The Reference almanac and the scripted dialogue must never surface, whatever else happens.
    assert.ok(![...detected].some((d) => d.includes('almanac') || d.includes('nightfall')));
    assert.ok(!falsePositives.some((d) => d.startsWith('unplanned')), 'nothing the writer did not plant');
    assert.ok(precision >= 0.8, `precision ${precision}`);
    assert.ok(recall >= 0.8, `recall ${recall}`);
  });
});
