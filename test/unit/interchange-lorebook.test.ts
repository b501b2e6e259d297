import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import zlib from 'node:zlib';
import YAML from 'yaml';
import { LorebookError, parseLorebook, type ParsedLorebook } from '../../src/knowledge/interchange/lorebook';
import { exportCampaignWorldInfo, worldInfoExportReport, type WorldInfoExportResult, type WorldInfoFile } from '../../src/knowledge/interchange/lorebookExport';
import { importLorebookFile, lorebookImportReport, portableSlug, type LorebookImportResult } from '../../src/knowledge/interchange/lorebookImport';
import { loadCampaign } from '../../src/knowledge/campaign/campaign';
import { importCampaign } from '../../src/knowledge/indexing/importer';
import { KnowledgeStore } from '../../src/knowledge/indexing/store';
import { EntityModel, entitySourcesFromStore } from '../../src/knowledge/entities';
import { analyzeStoreConflicts, keepStatement } from '../../src/knowledge/conflicts';
import { openSession } from '../../src/session';
import { readPngTextChunks } from '../../src/knowledge/interchange/lorebookPng';
import { corpusPath, EXAMPLE_CAMPAIGN } from '../support/corpora';
import { listTree, runCliCaptured, withIndexedSession } from '../support/interchange';
import { agnaiMemoryBook, fullCardV2, fullWorldInfo, novelAiLorebook, risuLorebook, v1Card, zip } from '../support/lorebookSpecs';

const LOREBOOKS = corpusPath('lorebooks');
const sample = (name: string): string => path.join(LOREBOOKS, name);
const SAMPLES = [
  'Eldoria.worldinfo.st-2024-09.json',
  'Eldoria.worldinfo.st-current.json',
  'Seraphina.card-v2.chara.json',
  'default_Seraphina.card-v2.png',
] as const;
/** SillyTavern's lowercase comments, read as names. */
const ELDORIA_TITLES = ['Eldoria', 'Shadowfang', 'Glade', 'Power'];
const ELDORIA_KEYS = [
  ['eldoria', 'wood', 'forest', 'magical forest'],
  ['shadowfang', 'beast', 'monster', 'monsters', 'beasts'],
  ['glade', 'safe haven', 'refuge'],
  ['power', 'magic', 'ability'],
];
/** Keys are triggers, phrases (`magical forest`, `safe haven`) too: the entity is the title, read as a name. */
const ELDORIA_ENTITIES = [['Eldoria'], ['Shadowfang'], ['Glade'], ['Power']];

const readJson = (name: string): Record<string, unknown> => JSON.parse(fs.readFileSync(sample(name), 'utf8')) as Record<string, unknown>;
const parseJsonValue = (name: string, value: unknown): ParsedLorebook => parseLorebook(name, Buffer.from(JSON.stringify(value)));

/** Splits a written entry file into its front matter (as data) and its body, the way a reader of the file would. */
function readEntryFile(file: string): { meta: Record<string, unknown>; body: string } {
  const text = fs.readFileSync(file, 'utf8');
  const match = /^---\n([\s\S]*?)\n---\n/.exec(text);
  assert.ok(match, `${file} opens with front matter`);
  return { meta: YAML.parse(match[1]!) as Record<string, unknown>, body: text.slice(match[0].length) };
}

function pngChunk(type: string, data: Buffer): Buffer {
  const length = Buffer.alloc(4);
  length.writeUInt32BE(data.length);
  const body = Buffer.concat([Buffer.from(type, 'latin1'), data]);
  const crc = Buffer.alloc(4);
  crc.writeUInt32BE(zlib.crc32(body));
  return Buffer.concat([length, body, crc]);
}

/** The real card PNG with one more chunk inserted just before IEND (the last 12 bytes). */
function withChunkBeforeIend(png: Buffer, chunk: Buffer): Buffer {
  return Buffer.concat([png.subarray(0, png.length - 12), chunk, png.subarray(png.length - 12)]);
}

/** The first four bytes of the real card PNG's IHDR onwards, without its text chunks: a PNG that is no card. */
const plainPng = (): Buffer => {
  const png = fs.readFileSync(sample('default_Seraphina.card-v2.png'));
  return Buffer.concat([png.subarray(0, 33), png.subarray(png.length - 12)]);
};
const base64Chunk = (keyword: string, value: unknown): Buffer =>
  pngChunk('tEXt', Buffer.concat([Buffer.from(`${keyword}\0`, 'latin1'), Buffer.from(Buffer.from(JSON.stringify(value)).toString('base64'), 'latin1')]));

const entriesOf = (book: ParsedLorebook) => book.entries.map((e) => e.worldInfo);
const keysOf = (book: ParsedLorebook) => entriesOf(book).map((e) => e.key);

describe('lorebook import: reading the real samples', () => {
  for (const name of SAMPLES) {
    it(`reads all four Eldoria entries of ${name} with their keys, titles and text`, () => {
      const book = parseLorebook(name, fs.readFileSync(sample(name)));
      assert.deepEqual(keysOf(book), ELDORIA_KEYS);
      assert.deepEqual(
        book.entries.map((e) => e.title),
        ELDORIA_TITLES,
      );
      assert.ok(entriesOf(book).every((e) => e.disable === false && e.constant === false));
      assert.ok((book.entries[0]!.worldInfo.content as string).startsWith('{{user}}: "What is Eldoria?"'));
    });
  }

  it('detects each format from the file itself', () => {
    assert.equal(parseLorebook('a', fs.readFileSync(sample(SAMPLES[0]))).format, 'sillytavern-world-info');
    assert.equal(parseLorebook('c', fs.readFileSync(sample(SAMPLES[2]))).format, 'character-card-v2');
    const png = parseLorebook('d', fs.readFileSync(sample(SAMPLES[3])));
    assert.equal(png.format, 'character-card-v2');
    assert.equal(png.name, 'Eldoria');
    assert.match(png.notes.join('\n'), /`chara` text chunk/);
  });

  it('reads the same lorebook from the PNG card as from its decoded chara JSON', () => {
    const fromPng = parseLorebook('png', fs.readFileSync(sample('default_Seraphina.card-v2.png')));
    const fromJson = parseLorebook('json', fs.readFileSync(sample('Seraphina.card-v2.chara.json')));
    assert.deepEqual(fromPng.entries, fromJson.entries);
    assert.deepEqual(fromPng.settings, fromJson.settings);
  });

  it('converts the real card book the way SillyTavern does: insertion_order → order, extensions → their World Info fields', () => {
    const card = readJson('Seraphina.card-v2.chara.json') as { data: { character_book: { entries: Record<string, unknown>[] } } };
    const book = parseLorebook('card', fs.readFileSync(sample('Seraphina.card-v2.chara.json')));
    card.data.character_book.entries.forEach((raw, i) => {
      const entry = book.entries[i]!.worldInfo;
      const ext = raw.extensions as Record<string, unknown>;
      assert.equal(entry.order, raw.insertion_order);
      assert.equal(entry.position, ext.position ?? (raw.position === 'before_char' ? 0 : 1));
      assert.equal(entry.depth, ext.depth ?? 4);
      assert.equal(entry.probability, ext.probability ?? 100);
      assert.equal(entry.displayIndex, ext.display_index ?? i);
      assert.deepEqual(entry.extensions, ext);
    });
  });
});

describe('lorebook formats written to their specs', () => {
  it('keeps every SillyTavern entry field, case-variant keys and regex keys included', () => {
    const data = fullWorldInfo();
    const book = parseJsonValue('full.json', data);
    const byUid = new Map(book.entries.map((e) => [e.sourceId, e]));
    for (const [uid, raw] of Object.entries(data.entries as Record<string, Record<string, unknown>>)) assert.deepEqual(byUid.get(uid)!.worldInfo, raw);
    assert.deepEqual(byUid.get('7')!.worldInfo.key, ['Elise', 'elise', 'ELISE']);
    assert.equal(byUid.get('3')!.title, '龙之森');
    assert.equal(byUid.get('5')!.title, 'Spell', 'no comment: the first plain key titles the entry');
    assert.equal(byUid.get('6')!.title, 'Old name', 'a title is one line');
    assert.deepEqual(book.settings, { name: 'Full', extensions: { world_tool: { version: 3 } } });
    assert.deepEqual(book.droppedSettings.map((d) => d.field), ['originalData']);
  });

  it('titles a book named only by its lowercase file name as a name: eldoria.json is Eldoria', () => {
    const { name: _name, ...unnamed } = fullWorldInfo();
    assert.equal(parseJsonValue('eldoria.json', unnamed).name, 'Eldoria');
    assert.equal(parseJsonValue('house of the moon.json', unnamed).name, 'House of the Moon');
    assert.equal(parseJsonValue('Westhaven lore.json', unnamed).name, 'Westhaven lore', 'a capital means the writer chose the case');
  });

  it('reads a Character Card V2 book with every extension, as SillyTavern converts it', () => {
    const book = parseJsonValue('mara.json', fullCardV2());
    const [bell, crypt] = book.entries;
    assert.equal(book.name, 'Mara lore');
    assert.deepEqual(book.settings, { name: 'Mara lore', description: 'What Mara knows.', scan_depth: 6, token_budget: 900, recursive_scanning: true, extensions: { tool: 'x' } });
    assert.deepEqual(
      { uid: bell!.worldInfo.uid, order: bell!.worldInfo.order, position: bell!.worldInfo.position, depth: bell!.worldInfo.depth, logic: bell!.worldInfo.selectiveLogic, sticky: bell!.worldInfo.sticky, role: bell!.worldInfo.role, caseSensitive: bell!.worldInfo.caseSensitive, matchPersona: bell!.worldInfo.matchPersonaDescription },
      { uid: 4, order: 40, position: 4, depth: 1, logic: 3, sticky: 2, role: 2, caseSensitive: true, matchPersona: true },
    );
    assert.deepEqual(bell!.dropped, { case_sensitive: true, name: 'Bell', priority: 7 }, 'what SillyTavern drops from a card entry is named');
    assert.deepEqual(
      { uid: crypt!.worldInfo.uid, position: crypt!.worldInfo.position, disable: crypt!.worldInfo.disable, title: crypt!.title },
      { uid: 0, position: 0, disable: true, title: 'Abbey Crypt' },
      'no id: the smallest free uid; before_char: position 0; a name titles an entry without a comment',
    );
  });

  it('reads a CharX card (a zip with card.json) and a V3 card', () => {
    const card = { ...fullCardV2(), spec: 'chara_card_v3', spec_version: '3.0' };
    const charx = parseLorebook('mara.charx', zip({ 'assets/icon/main.png': plainPng(), 'card.json': JSON.stringify(card) }));
    assert.equal(charx.format, 'charx');
    assert.deepEqual(entriesOf(charx), entriesOf(parseJsonValue('mara.json', fullCardV2())));
    assert.throws(() => parseLorebook('x.charx', zip({ 'readme.txt': 'hi' })), /not a CharX card: it has no card\.json/);
    assert.throws(() => parseLorebook('x.charx', zip({ 'card.json': 'hi' }).subarray(0, 40)), /corrupt zip|truncated zip/);
  });

  it('reads a V1 card, which has no lorebook, as one entry about the character', () => {
    const book = parseJsonValue('tam.json', v1Card());
    assert.equal(book.format, 'character-card-v1');
    assert.equal(book.entries.length, 1);
    const [tam] = book.entries;
    assert.deepEqual([tam!.title, tam!.worldInfo.key], ['Brother Tam', ['Brother Tam']]);
    assert.equal(tam!.worldInfo.content, '## Description\n\nA {{char}} who brews ale.\n\n## Personality\n\nGruff, kind.\n\n## Scenario\n\nThe abbey kitchen.');
    assert.deepEqual(Object.keys(tam!.dropped), ['first_mes', 'mes_example']);
    assert.equal(book.character, 'Brother Tam');
    const png = parseLorebook('tam.png', withChunkBeforeIend(plainPng(), base64Chunk('chara', v1Card())));
    assert.deepEqual(entriesOf(png), entriesOf(book));
  });

  it('reads an Agnai memory book: keywords, name, entry, weight → order, enabled', () => {
    const book = parseJsonValue('memory.json', agnaiMemoryBook());
    assert.equal(book.format, 'agnai-memory-book');
    assert.equal(book.name, 'Westhaven memory');
    const [harbour, gulls] = book.entries;
    assert.deepEqual(
      [harbour!.worldInfo.key, harbour!.worldInfo.order, harbour!.worldInfo.comment, harbour!.worldInfo.disable],
      [['harbour', 'Harbour'], 40, 'Harbour', false],
    );
    assert.equal(gulls!.worldInfo.disable, true);
    assert.deepEqual(harbour!.dropped, { priority: 5 });
  });

  it('reads a RisuAI lorebook: comma keys, second keys, always active, activation percent; folders are not entries', () => {
    const book = parseJsonValue('risu.json', risuLorebook());
    assert.equal(book.format, 'risu-lorebook');
    assert.equal(book.entries.length, 2);
    const [tower, sea] = book.entries;
    assert.deepEqual(
      [tower!.worldInfo.key, tower!.worldInfo.keysecondary, tower!.worldInfo.selective, tower!.worldInfo.order, tower!.worldInfo.probability],
      [['tower', 'spire'], ['night'], true, 30, 80],
    );
    assert.equal(sea!.worldInfo.constant, true);
    assert.deepEqual(Object.keys(sea!.dropped), ['mode', 'extentions']);
    assert.match(book.notes.join('\n'), /1 RisuAI folder rows are folders/);
  });

  it('reads a NovelAI lorebook from JSON and from a PNG naidata chunk', () => {
    const book = parseJsonValue('world.lorebook', novelAiLorebook());
    assert.equal(book.format, 'novelai');
    const [fangs, glade] = book.entries;
    assert.deepEqual(
      { title: fangs!.title, keys: fangs!.worldInfo.key, constant: fangs!.worldInfo.constant, order: fangs!.worldInfo.order, tags: fangs!.tags },
      { title: 'Shadowfangs', keys: ['shadowfang', 'beast'], constant: true, order: 400, tags: ['Creatures'] },
    );
    assert.equal(glade!.worldInfo.disable, true);
    assert.ok('contextConfig.trimDirection' in fangs!.dropped && 'searchRange' in fangs!.dropped && !('contextConfig.budgetPriority' in fangs!.dropped));
    const png = parseLorebook('world.png', withChunkBeforeIend(plainPng(), base64Chunk('naidata', novelAiLorebook())));
    assert.equal(png.format, 'novelai-png');
    assert.deepEqual(entriesOf(png), entriesOf(book));
  });

  it('names a file that is no lorebook by what it is, with the reason', () => {
    const cases: [string, unknown, RegExp][] = [
      ['story.story', { storyContainerVersion: 1, metadata: {}, content: {} }, /a NovelAI story \(\.story\), not a lorebook/],
      ['aid.json', [{ keys: 'castle,gate', entry: 'A castle.', isNotHidden: true }], /an AI Dungeon World Info \/ Story Cards export/],
      ['scenario.json', { title: 'x', storyCards: [] }, /an AI Dungeon scenario or adventure export/],
      ['char.json', { kind: 'character', name: 'x' }, /an Agnai character, not a memory book/],
    ];
    for (const [file, value, reason] of cases) assert.throws(() => parseJsonValue(file, value), reason, file);
    assert.throws(() => parseLorebook('notes.md', Buffer.from('# Notes\n\nNot JSON.')), /plain text, not JSON/);
    // An empty file (a download that never finished) is not "plain text": the writer is told it is empty.
    for (const bytes of ['', '\uFEFF\n  \n']) assert.throws(() => parseLorebook('world.json', Buffer.from(bytes)), /world\.json: the file is empty/);
    assert.throws(() => parseLorebook('chat.jsonl', Buffer.from('{"user_name":"You","character_name":"Sera"}\n{"name":"You","mes":"hi"}\n')), /a SillyTavern chat \(JSON Lines\)/);
  });

  it('makes portable file names in any script', () => {
    assert.equal(portableSlug('../../etc/passwd'), 'etc-passwd');
    assert.equal(portableSlug('CON'), 'con-entry');
    assert.equal(portableSlug('Ünïcödé Façade'), 'ünïcödé-façade');
    assert.equal(portableSlug('龍の森'), '龍の森');
    assert.equal(portableSlug('a: b/c\\d*e?"f<g>h|i'), 'a-b-c-d-e-f-g-h-i');
    assert.equal(portableSlug('\u202Eevil\u200B'), 'evil');
    assert.equal(portableSlug('!!!'), 'entry');
    assert.equal(Array.from(portableSlug('森'.repeat(200))).length, 60);
  });
});

/** A campaign with nothing in it but its campaign.yaml, so an export holds exactly what was imported. */
function emptyCampaign(dir: string): string {
  const root = path.join(dir, 'campaign');
  fs.mkdirSync(root, { recursive: true });
  fs.writeFileSync(path.join(root, 'campaign.yaml'), 'id: roundtrip\ntitle: Round trip\ndefault_class: reference\n');
  return root;
}

/** Imports `bytes` as canon into an empty campaign and exports its canon as World Info. */
async function roundTrip(dir: string, name: string, bytes: Buffer): Promise<{ imported: LorebookImportResult; world: WorldInfoFile; exported: WorldInfoExportResult; campaign: string }> {
  const campaign = emptyCampaign(dir);
  const file = path.join(dir, name);
  fs.writeFileSync(file, bytes);
  const imported = importLorebookFile(file, { campaignRoot: campaign, class: 'canon' });
  const out = path.join(dir, 'exported.json');
  const exported = await withIndexedSession(campaign, (session) => exportCampaignWorldInfo(session.store, out, { force: true }));
  return { imported, world: JSON.parse(fs.readFileSync(out, 'utf8')) as WorldInfoFile, exported, campaign };
}

describe('lorebook round trip: import as canon, export as World Info, compare every field', () => {
  let dir: string;
  beforeEach(() => (dir = fs.mkdtempSync(path.join(os.tmpdir(), 'st-lorebook-roundtrip-'))));
  afterEach(() => fs.rmSync(dir, { recursive: true, force: true }));

  for (const name of ['Eldoria.worldinfo.st-2024-09.json', 'Eldoria.worldinfo.st-current.json']) {
    it(`gives SillyTavern back ${name} entry for entry, field for field, uid for uid`, async () => {
      const original = readJson(name) as { entries: Record<string, unknown> };
      const { world, exported } = await roundTrip(dir, name, fs.readFileSync(sample(name)));
      assert.deepEqual(world, original);
      assert.deepEqual(exported.renumbered, []);
    });
  }

  it('gives back a World Info file with every field at a non-default value, Chinese titles, case variants and repeated text', async () => {
    const original = fullWorldInfo();
    const { world, imported, exported } = await roundTrip(dir, 'full.json', Buffer.from(JSON.stringify(original)));
    const { originalData: _copy, ...rest } = original;
    assert.deepEqual(world, rest, 'every entry and every book field but SillyTavern\'s copy of a card book');
    assert.deepEqual(imported.bookSettings.dropped.map((d) => d.field), ['originalData']);
    assert.ok(imported.written.some((w) => w.path === 'lore/龙之森.md'), 'a Chinese title keeps its name');
    assert.deepEqual(exported.skipped, [], 'entries that repeat another\'s text are exported with their own keys');
  });

  for (const [name, bytes] of [
    ['Seraphina.card-v2.chara.json', () => fs.readFileSync(sample('Seraphina.card-v2.chara.json'))],
    ['default_Seraphina.card-v2.png', () => fs.readFileSync(sample('default_Seraphina.card-v2.png'))],
    ['memory.json', () => Buffer.from(JSON.stringify(agnaiMemoryBook()))],
    ['risu.json', () => Buffer.from(JSON.stringify(risuLorebook()))],
    ['world.lorebook', () => Buffer.from(JSON.stringify(novelAiLorebook()))],
    ['tam.json', () => Buffer.from(JSON.stringify(v1Card()))],
  ] as const) {
    it(`gives SillyTavern the entries it makes of ${name} itself, field for field`, async () => {
      const expected = parseLorebook(name, bytes());
      const { world } = await roundTrip(dir, name, bytes());
      assert.deepEqual(Object.values(world.entries), entriesOf(expected));
    });
  }

  it('gives back a card book with every extension and its book settings; a name-titled entry gets that name as its comment', async () => {
    const bytes = Buffer.from(JSON.stringify(fullCardV2()));
    const expected = entriesOf(parseLorebook('mara.json', bytes));
    const { world, imported, exported } = await roundTrip(dir, 'mara.json', bytes);
    assert.deepEqual(world.entries['4'], expected[0]);
    assert.deepEqual(world.entries['0'], { ...expected[1], comment: 'Abbey Crypt' });
    const { entries: _entries, ...book } = world;
    assert.deepEqual(book, { name: 'Mara lore', description: 'What Mara knows.', scan_depth: 6, token_budget: 900, recursive_scanning: true, extensions: { tool: 'x' } });
    assert.deepEqual(exported.bookSettings.written, ['name', 'description', 'scan_depth', 'token_budget', 'recursive_scanning', 'extensions']);
    assert.deepEqual(imported.notCarried, [{ entryId: '4', title: 'The abbey bell', fields: { case_sensitive: 'true', name: '"Bell"', priority: '7' } }]);
  });

  it('writes the writer\'s edits back: a new title, secondary keys, logic, always include, enabled', async () => {
    const { campaign } = await roundTrip(dir, 'full.json', Buffer.from(JSON.stringify(fullWorldInfo())));
    const elise = path.join(campaign, 'lore/elise.md');
    const text = fs.readFileSync(elise, 'utf8').replace('title: Elise', 'title: Elise the Clerk').replace('notes:', 'secondary_keys: [ledger, debt]\nselective_logic: and_all\nalways_include: true\nnotes:');
    fs.writeFileSync(elise, text);
    const old = path.join(campaign, 'lore/old-name.md');
    fs.writeFileSync(old, fs.readFileSync(old, 'utf8').replace('enabled: false\n', '').replace('always_include: true\n', ''));
    const out = path.join(dir, 'edited.json');
    await withIndexedSession(campaign, (session) => exportCampaignWorldInfo(session.store, out));
    const entries = (JSON.parse(fs.readFileSync(out, 'utf8')) as WorldInfoFile).entries;
    assert.deepEqual(
      [entries['7']!.comment, entries['7']!.keysecondary, entries['7']!.selective, entries['7']!.selectiveLogic, entries['7']!.constant, entries['7']!.key],
      ['Elise the Clerk', ['ledger', 'debt'], true, 3, true, ['Elise', 'elise', 'ELISE']],
    );
    assert.ok(!entries['6']!.disable && !entries['6']!.constant, 'enabled and no longer always included');
    assert.equal(entries['6']!.comment, 'Old\n  name ', 'an untouched title keeps its comment verbatim');
  });

  it('renumbers only a uid an earlier entry holds, and says so', async () => {
    const campaign = emptyCampaign(dir);
    importLorebookFile(sample('Eldoria.worldinfo.st-current.json'), { campaignRoot: campaign, class: 'canon', folder: 'lore/a' });
    importLorebookFile(sample('Eldoria.worldinfo.st-2024-09.json'), { campaignRoot: campaign, class: 'canon', folder: 'lore/b' });
    const result = await withIndexedSession(campaign, (session) => exportCampaignWorldInfo(session.store, path.join(dir, 'both.json')));
    assert.equal(result.entries.length, 8, 'identical text in two books: both exported');
    assert.deepEqual(
      result.renumbered.map((r) => [r.path, r.from, r.to]),
      [
        ['lore/b/eldoria.md', '0', 4],
        ['lore/b/glade.md', '2', 5],
        ['lore/b/power.md', '3', 6],
        ['lore/b/shadowfang.md', '1', 7],
      ],
    );
    assert.match(worldInfoExportReport(result, 'both.json').join('\n'), /Renumbered: lore\/b\/glade\.md kept uid 2, which an earlier entry holds; it is uid 5\./);
  });
});
describe('lorebook import: writing campaign markdown', () => {
  let dir: string;
  let campaign: string;
  beforeEach(() => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'st-lorebook-'));
    campaign = path.join(dir, 'campaign');
    fs.cpSync(EXAMPLE_CAMPAIGN, campaign, { recursive: true });
  });
  afterEach(() => fs.rmSync(dir, { recursive: true, force: true }));

  it('writes one file per entry: the text verbatim as the body, keys and the kept fields as front matter', () => {
    const result = importLorebookFile(sample('default_Seraphina.card-v2.png'), { campaignRoot: campaign, class: 'canon' });
    assert.deepEqual(
      result.written.map((w) => w.path),
      ['lore/eldoria.md', 'lore/shadowfang.md', 'lore/glade.md', 'lore/power.md'],
    );
    const source = parseLorebook('png', fs.readFileSync(sample('default_Seraphina.card-v2.png')));
    for (const [i, written] of result.written.entries()) {
      const { meta, body } = readEntryFile(path.join(campaign, written.path));
      const entry = source.entries[i]!.worldInfo;
      assert.equal(body, entry.content);
      assert.deepEqual(meta.keys, ELDORIA_KEYS[i]);
      assert.deepEqual(meta.entities, ELDORIA_ENTITIES[i]);
      assert.equal(meta.class, 'canon');
      assert.equal(meta.title, ELDORIA_TITLES[i]);
      assert.equal(meta.always_include, undefined);
      assert.equal(meta.enabled, undefined);
      const kept = (meta.sillytavern as { entry: Record<string, unknown>; book: Record<string, unknown> });
      assert.equal(kept.entry.order, entry.order);
      assert.equal(kept.entry.uid, entry.uid);
      assert.deepEqual(kept.book, { name: 'Eldoria', settings: source.settings });
      assert.match(String(meta.notes), /default_Seraphina\.card-v2\.png \(Eldoria\), entry \d/);
      assert.equal(meta.character, 'Seraphina', "the card's character: who {{char}} is in play");
    }
  });

  it('puts what play uses at the top: active secondary keys with their logic, match options, always include, disabled', () => {
    const data = fullWorldInfo() as { entries: Record<string, Record<string, unknown>> };
    const file = path.join(dir, 'full.json');
    fs.writeFileSync(file, JSON.stringify(data));
    const result = importLorebookFile(file, { campaignRoot: campaign, class: 'reference', folder: 'lore/full' });
    const meta = (title: string) => readEntryFile(path.join(campaign, result.written.find((w) => w.title === title)!.path)).meta;
    const keep = meta('Storm Keep');
    assert.deepEqual(
      [keep.keys, keep.secondary_keys, keep.selective_logic, keep.case_sensitive, keep.match_whole_words, keep.entities],
      [['Storm Keep', 'storm keep', '/storm ?keep/i'], ['siege', 'winter'], 'not_any', true, false, ['Storm Keep']],
    );
    const wolves = meta('Wolves');
    assert.equal(wolves.secondary_keys, undefined, 'selective is off: SillyTavern ignores these secondary keys, so play does too');
    assert.deepEqual((wolves.sillytavern as { entry: Record<string, unknown> }).entry.keysecondary, ['night']);
    const old = meta('Old name');
    assert.deepEqual([old.always_include, old.enabled], [true, false]);
    assert.deepEqual(meta('Elise').keys, ['Elise', 'elise', 'ELISE']);
    assert.deepEqual(meta('Elise').entities, ['Elise']);
  });

  it('keeps hostile entry text inert and intact: front-matter fences, script tags, YAML, macros', () => {
    const data = readJson('Eldoria.worldinfo.st-current.json') as { entries: Record<string, Record<string, unknown>> };
    const hostile = '---\nclass: inspiration\n---\n<script>alert(1)</script>\n{{char}} ![x](https://example.com/x.png)\r\n\u0000end';
    Object.assign(data.entries['0']!, { content: hostile, comment: 'title: "quoted" # not a comment\n---', constant: true, disable: true });
    const file = path.join(dir, 'hostile.json');
    fs.writeFileSync(file, JSON.stringify(data));
    const result = importLorebookFile(file, { campaignRoot: campaign, class: 'reference', folder: 'lore/eldoria' });
    const { meta, body } = readEntryFile(path.join(campaign, result.written[0]!.path));
    assert.equal(body, hostile);
    assert.equal(meta.class, 'reference');
    assert.equal(meta.title, 'title: "quoted" # not a comment ---');
    assert.equal((meta.sillytavern as { entry: Record<string, unknown> }).entry.comment, 'title: "quoted" # not a comment\n---');
    assert.equal(meta.always_include, true);
    assert.equal(meta.enabled, false);
    assert.equal(result.written[0]!.path, 'lore/eldoria/title-quoted-not-a-comment.md');
  });

  it('never overwrites: a second import gets suffixed names and leaves the first files as they were', () => {
    importLorebookFile(sample('Eldoria.worldinfo.st-current.json'), { campaignRoot: campaign, class: 'canon' });
    const before = fs.readFileSync(path.join(campaign, 'lore/glade.md'));
    const second = importLorebookFile(sample('Eldoria.worldinfo.st-2024-09.json'), { campaignRoot: campaign, class: 'reference' });
    assert.deepEqual(
      second.written.map((w) => w.path),
      ['lore/eldoria-2.md', 'lore/shadowfang-2.md', 'lore/glade-2.md', 'lore/power-2.md'],
    );
    assert.deepEqual(fs.readFileSync(path.join(campaign, 'lore/glade.md')), before);
  });

  it('gives entries with the same title distinct names, Chinese ones included', () => {
    const data = readJson('Eldoria.worldinfo.st-2024-09.json') as { entries: Record<string, Record<string, unknown>> };
    for (const entry of Object.values(data.entries)) entry.comment = '森林';
    const file = path.join(dir, 'same.json');
    fs.writeFileSync(file, JSON.stringify(data));
    const result = importLorebookFile(file, { campaignRoot: campaign, class: 'canon' });
    assert.deepEqual(
      result.written.map((w) => w.path),
      ['lore/森林.md', 'lore/森林-2.md', 'lore/森林-3.md', 'lore/森林-4.md'],
    );
  });

  it('writes front matter the knowledge importer indexes without a warning: class, entities, always_include, enabled', async () => {
    const file = path.join(dir, 'full.json');
    fs.writeFileSync(file, JSON.stringify(fullWorldInfo()));
    const result = importLorebookFile(file, { campaignRoot: campaign, class: 'reference', folder: 'lore/full' });
    const store = KnowledgeStore.inMemory('westhaven');
    const report = await importCampaign(loadCampaign(campaign), store);
    const lore = report.files.filter((f) => f.path.startsWith('lore/'));
    assert.equal(lore.length, result.written.length);
    for (const f of lore) assert.deepEqual(f.issues.filter((i) => i.code !== 'duplicate'), [], f.path);
    const keep = store.getSourceByPath(result.written.find((w) => w.title === 'Storm Keep')!.path)!;
    assert.deepEqual(
      { class: keep.class, origin: keep.classOrigin.kind, title: keep.title, entities: keep.entities },
      { class: 'reference', origin: 'front-matter', title: 'Storm Keep', entities: ['Storm Keep'] },
    );
    const old = store.getSourceByPath(result.written.find((w) => w.title === 'Old name')!.path)!;
    assert.deepEqual([old.alwaysInclude, old.enabled], [true, false]);
    store.close();
  });

  it('makes each entry one Codex entity named by its title: trigger words such as "magic", "beast" or "magical forest" name nothing', async () => {
    importLorebookFile(sample('Eldoria.worldinfo.st-current.json'), { campaignRoot: campaign, class: 'canon' });
    const store = KnowledgeStore.inMemory('westhaven');
    await importCampaign(loadCampaign(campaign), store);
    const model = new EntityModel(entitySourcesFromStore(store));
    for (const word of ['magic', 'ability', 'beast', 'beasts', 'monster', 'wood', 'forest', 'refuge', 'magical forest', 'safe haven']) assert.equal(model.resolveName(word), undefined, word);
    assert.deepEqual(
      model.canonEntities().filter((e) => e.definitions[0]?.path.startsWith('lore/')).map((e) => e.display),
      ['Eldoria', 'Glade', 'Power', 'Shadowfang'],
      'the Codex lists each entry once, titled as a name (SillyTavern wrote `eldoria`)',
    );
    const said = 'A beast may use its power and magic once per day; Shadowfang waits in the magical forest by the Glade.';
    assert.deepEqual(model.mentionsIn('notes.md', said).map((m) => m.text), ['Shadowfang', 'Glade']);
    store.close();
  });

  it('reports where every field went, what nothing holds entry by entry, and what play does not act on', () => {
    const data = fullWorldInfo();
    const file = path.join(dir, 'full.json');
    fs.writeFileSync(file, JSON.stringify(data));
    const result = importLorebookFile(file, { campaignRoot: campaign, class: 'canon' });
    const fate = new Map(result.fields.map((f) => [f.field, f]));
    assert.deepEqual(fate.get('key'), { field: 'key', entries: 9, keptAs: ['keys'] });
    assert.deepEqual(fate.get('content')!.keptAs, ['body']);
    assert.deepEqual(fate.get('futureField'), { field: 'futureField', entries: 1, keptAs: ['sillytavern.entry.futureField'] });
    assert.deepEqual(fate.get('keysecondary')!.keptAs.sort(), ['secondary_keys ×1', 'sillytavern.entry.keysecondary ×7']);
    assert.deepEqual(result.notCarried, []);
    const exportOnly = new Map(result.exportOnly.map((b) => [b.field, b]));
    // Activation and insertion fields play as SillyTavern plays them; what needs more than a chat does not.
    for (const played of ['probability', 'position', 'depth', 'role']) assert.equal(exportOnly.get(played), undefined, played);
    assert.deepEqual(exportOnly.get('characterFilter')!.entries, ['10']);
    const report = lorebookImportReport(result, 'full.json').join('\n');
    assert.match(report, /^Imported 9 entries from SillyTavern World Info full\.json \(Full\) into lore\/ as canon:$/m);
    assert.match(report, /^ {2}futureField +1 +sillytavern\.entry\.futureField$/m);
    assert.match(report, /^ {2}book originalData: SillyTavern's copy of the card lorebook/m);
    assert.doesNotMatch(report, /^ {2}probability: /m);
    assert.doesNotMatch(report, /^ {2}(position|depth|role): /m);
    assert.match(report, /^ {2}characterFilter: .* in entries 10$/m);
  });

  describe('bad input: a clear reason naming the file, and nothing written', () => {
    const png = (): Buffer => fs.readFileSync(sample('default_Seraphina.card-v2.png'));
    const json = (): Buffer => fs.readFileSync(sample('Eldoria.worldinfo.st-current.json'));
    const cases: [string, () => Buffer | string, RegExp][] = [
      ['truncated JSON', () => json().subarray(0, 2000), /not valid JSON/],
      ['an entry without keys', () => JSON.stringify({ entries: { 0: { uid: 0, content: 'x' } } }), /World Info.*entries\.0\.key/],
      ['content that is not text', () => JSON.stringify({ entries: { 0: { uid: 0, key: ['a'], content: 5 } } }), /entries\.0\.content/],
      ['an empty lorebook', () => JSON.stringify({ entries: {} }), /no entries/],
      ['a JSON array', () => '[]', /not an object/],
      ['an unrelated JSON object', () => '{"name": "x"}', /not a recognised lorebook/],
      ['a card without a lorebook', () => JSON.stringify({ spec: 'chara_card_v2', data: { name: 'Nobody' } }), /Nobody has no lorebook/],
      ['a truncated PNG', () => png().subarray(0, 100_000), /truncated PNG/],
      ['a PNG with a corrupted text chunk', () => {
        const bytes = Buffer.from(png());
        const at = bytes.indexOf('chara\0', 0, 'latin1') + 20;
        bytes[at] = bytes[at] === 0x41 ? 0x42 : 0x41;
        return bytes;
      }, /CRC mismatch in chunk tEXt/],
      ['a PNG that is not a card', () => Buffer.concat([png().subarray(0, 33), png().subarray(png().length - 12)]), /no `ccv3`, `chara` or `naidata`/],
      ['a PNG whose chara chunk is not base64', () => withChunkBeforeIend(Buffer.concat([png().subarray(0, 33), png().subarray(png().length - 12)]), pngChunk('tEXt', Buffer.from('chara\0{not base64}', 'latin1'))), /not base64/],
      ['binary that is not a PNG', () => Buffer.from([0xff, 0xfe, 0x00, 0x81, 0x82]), /neither a PNG, a CharX zip nor UTF-8 text/],
    ];
    for (const [what, bytes, reason] of cases) {
      it(`refuses ${what}`, () => {
        const file = path.join(dir, 'bad-input.json');
        fs.writeFileSync(file, bytes());
        const before = listTree(campaign);
        assert.throws(
          () => importLorebookFile(file, { campaignRoot: campaign, class: 'canon' }),
          (error: unknown) => error instanceof LorebookError && error.message.startsWith(file) && reason.test(error.message),
        );
        assert.deepEqual(listTree(campaign), before);
      });
    }

    it('refuses a folder outside the campaign or in its data folder', () => {
      for (const folder of ['../outside', '/abs', 'C:/x', 'a/../../b', '.storyteller/lore', 'a\0b']) {
        assert.throws(() => importLorebookFile(sample(SAMPLES[0]), { campaignRoot: campaign, class: 'canon', folder }), /plain path inside the campaign|never writes into/);
      }
      assert.ok(!fs.existsSync(path.join(dir, 'outside')));
    });
  });
});

describe('lorebook import: PNG chunks', () => {
  const png = fs.readFileSync(sample('default_Seraphina.card-v2.png'));

  it('prefers the ccv3 chunk over chara when a card has both', () => {
    const v3 = readJson('Seraphina.card-v2.chara.json') as { spec: string; data: { character_book: { entries: { keys: string[] }[] } } };
    v3.spec = 'chara_card_v3';
    v3.data.character_book.entries[0]!.keys = ['v3 only key'];
    const chunk = pngChunk('tEXt', Buffer.concat([Buffer.from('ccv3\0', 'latin1'), Buffer.from(Buffer.from(JSON.stringify(v3)).toString('base64'), 'latin1')]));
    const book = parseLorebook('both.png', withChunkBeforeIend(png, chunk));
    assert.equal(book.format, 'character-card-v3');
    assert.deepEqual(book.entries[0]!.worldInfo.key, ['v3 only key']);
  });

  it('reads compressed iTXt and zTXt chunks, and refuses a PNG that does not start with IHDR', () => {
    const itxt = pngChunk('iTXt', Buffer.concat([Buffer.from('note\0\x01\x00en\0\0', 'latin1'), zlib.deflateSync(Buffer.from('héllo'))]));
    const ztxt = pngChunk('zTXt', Buffer.concat([Buffer.from('other\0\x00', 'latin1'), zlib.deflateSync(Buffer.from('plain'))]));
    const chunks = readPngTextChunks(withChunkBeforeIend(withChunkBeforeIend(png, itxt), ztxt));
    assert.equal(chunks.get('note'), 'héllo');
    assert.equal(chunks.get('other'), 'plain');
    assert.ok(chunks.get('chara')!.startsWith('eyJ'));
    const noHeader = Buffer.concat([png.subarray(0, 8), png.subarray(33)]);
    assert.throws(() => readPngTextChunks(noHeader), /first chunk is not IHDR/);
  });
});

describe('lorebook import: CLI', () => {
  let dir: string;
  let campaign: string;
  beforeEach(() => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'st-lorebook-cli-'));
    campaign = path.join(dir, 'campaign');
    fs.cpSync(EXAMPLE_CAMPAIGN, campaign, { recursive: true });
  });
  afterEach(() => fs.rmSync(dir, { recursive: true, force: true }));

  const cli = (argv: string[]) => runCliCaptured(argv, campaign);

  it('imports from inside the campaign and prints the same fidelity report the editor shows', async () => {
    const file = sample('Eldoria.worldinfo.st-2024-09.json');
    const { code, stdout } = await cli(['import-lorebook', file, '--class', 'inspiration']);
    assert.equal(code, 0);
    const again = importLorebookFile(file, { campaignRoot: campaign, class: 'inspiration', folder: 'lore-again' });
    const report = lorebookImportReport({ ...again, folder: 'lore', written: again.written.map((w) => ({ ...w, path: w.path.replace('lore-again/', 'lore/') })) }, path.relative(campaign, file));
    assert.ok(stdout.startsWith(`${report.join('\n')}\n`), 'the CLI prints the shared report');
    assert.match(stdout, /^ {2}position +4 +sillytavern\.entry\.position$/m);
    assert.equal(readEntryFile(path.join(campaign, 'lore/power.md')).meta.class, 'inspiration');
  });

  it('answers --json with the written files and where every field went', async () => {
    const { code, stdout } = await cli(['import-lorebook', sample('Seraphina.card-v2.chara.json'), '--class', 'canon', '--folder', 'lore/seraphina', '--json']);
    assert.equal(code, 0);
    const result = JSON.parse(stdout) as LorebookImportResult;
    assert.equal(result.written[0]!.path, 'lore/seraphina/eldoria.md');
    assert.deepEqual(result.fields.find((f) => f.field === 'insertion_order'), { field: 'insertion_order', entries: 4, keptAs: ['sillytavern.entry.order'] });
  });

  it('requires a class, and refuses a bad file with exit code 3 and a JSON reason', async () => {
    assert.equal((await cli(['import-lorebook', sample(SAMPLES[0])])).code, 2);
    const bad = path.join(dir, 'bad.json');
    fs.writeFileSync(bad, '{"entries": ');
    const { code, stdout } = await cli(['import-lorebook', bad, '--class', 'canon', '--json']);
    assert.equal(code, 3);
    assert.match((JSON.parse(stdout) as { error: string }).error, /bad\.json: the file is not valid JSON/);
    assert.ok(!fs.existsSync(path.join(campaign, 'lore')));
  });
});

describe('lorebook export: canon as SillyTavern World Info', () => {
  let dir: string;
  let campaign: string;
  beforeEach(() => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'st-lorebook-export-'));
    campaign = path.join(dir, 'campaign');
    fs.cpSync(EXAMPLE_CAMPAIGN, campaign, { recursive: true });
  });
  afterEach(() => fs.rmSync(dir, { recursive: true, force: true }));

  it('exports only canon; a file written by hand becomes a new entry keyed by its title and entities, with SillyTavern defaults', async () => {
    const out = path.join(dir, 'world.json');
    const result = await withIndexedSession(campaign, (session) => exportCampaignWorldInfo(session.store, out));
    const world = JSON.parse(fs.readFileSync(out, 'utf8')) as WorldInfoFile;
    const paths = result.entries.map((e) => e.path);
    assert.ok(paths.includes('characters/mara.md') && paths.includes('canon.md'));
    assert.ok(!paths.includes('reference.md') && !paths.includes('inspiration.md'), 'reference and inspiration stay out');
    const mara = Object.values(world.entries).find((e) => e.comment === 'Sister Mara')!;
    assert.deepEqual(mara.key, ['Sister Mara', 'Mara']);
    assert.ok(!(mara.content as string).startsWith('---'), 'front matter is not part of the entry text');
    assert.match(mara.content as string, /^Sister Mara\n\n- Age: 34\n/, 'plain text: no heading marks, no bold');
    assert.deepEqual([mara.order, mara.position, mara.probability, mara.selective, mara.displayIndex], [100, 0, 100, true, mara.uid]);
    assert.deepEqual(result.keyedByTitle, ['rules.md']);
    const aldric = result.notes.find((n) => n.path === 'characters/brother-aldric.md')!.notes;
    assert.ok(aldric.includes('`visibility: "hidden"` has no World Info field'), 'a hidden source is named: SillyTavern would show it like any other');
  });

  it('keys a file by its title and aliases, applies the writer\'s Keep decision, and writes plain text (CLI export-lorebook)', async () => {
    fs.writeFileSync(path.join(campaign, 'lantern-guild.md'), '---\nclass: canon\ntitle: Lantern Guild\nentities: [the Guild]\n---\n# Lantern Guild\n\nThe Guild lights the [[Old Abbey|abbey]] road for [[Sister Mara]].\n');
    fs.writeFileSync(path.join(campaign, 'bible.md'), '---\nclass: canon\ntitle: The Sunken Crown — setting bible\n---\n# The Sunken Crown\n\nA drowned kingdom.\n');
    fs.writeFileSync(path.join(campaign, 'characters', 'mara-later.md'), '---\nclass: canon\ntitle: Mara, years later\nentities: [Mara]\n---\n# Mara\n\n- **Age:** 47\n');
    const session = openSession(campaign);
    try {
      await session.reindex();
      const conflict = analyzeStoreConflicts(session.store).conflicts.find((c) => c.attribute === 'Age')!;
      keepStatement(session.play.db, session.campaign.id, conflict, conflict.a.value === '47' ? conflict.a : conflict.b);
    } finally {
      await session.close();
    }
    const run = await runCliCaptured(['export-lorebook', '--out', '../world.json'], campaign);
    assert.equal(run.code, 0, run.stderr);
    const entries = Object.values((JSON.parse(fs.readFileSync(path.join(dir, 'world.json'), 'utf8')) as WorldInfoFile).entries);
    const entry = (comment: string) => entries.find((e) => e.comment === comment)!;
    assert.deepEqual(entry('Lantern Guild').key, ['Lantern Guild', 'the Guild'], 'the title is a key beside the aliases');
    assert.equal(entry('Lantern Guild').content, 'Lantern Guild\n\nThe Guild lights the abbey road for Sister Mara.\n', 'links keep their words; no # heading');
    assert.deepEqual(entry('The Sunken Crown — setting bible').key, ['The Sunken Crown'], 'a long title gives its name part');
    assert.match(entry('Sister Mara').content as string, /^- Age: 47$/m, 'the writer kept 47: the other file does not tell SillyTavern 34');
    assert.doesNotMatch(entry('Sister Mara').content as string, /34/);
  });

  it('answers the CLI with the shared report, --json, and refuses to overwrite without --force', async () => {
    const first = await runCliCaptured(['export-lorebook', '--out', '../world.json', '--json'], campaign);
    assert.equal(first.code, 0, first.stderr);
    const result = JSON.parse(first.stdout) as WorldInfoExportResult;
    assert.ok(result.entries.length > 0);
    const again = await runCliCaptured(['export-lorebook', '--out', '../world.json'], campaign);
    assert.equal(again.code, 3);
    assert.match(again.stderr, /world\.json: already exists/);
    const forced = await runCliCaptured(['export-lorebook', '--out', '../world.json', '--force'], campaign);
    assert.equal(forced.code, 0);
    assert.equal(forced.stdout, `${worldInfoExportReport(result, '../world.json').join('\n')}\n`);
  });
});
