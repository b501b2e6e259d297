import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import zlib from 'node:zlib';
import YAML from 'yaml';
import { LorebookError, parseLorebook, type ParsedLorebook } from '../../src/knowledge/interchange/lorebook';
import { exportCampaignWorldInfo } from '../../src/knowledge/interchange/lorebookExport';
import { importLorebookFile, portableSlug } from '../../src/knowledge/interchange/lorebookImport';
import { loadCampaign } from '../../src/knowledge/campaign/campaign';
import { importCampaign } from '../../src/knowledge/indexing/importer';
import { KnowledgeStore } from '../../src/knowledge/indexing/store';
import { readPngTextChunks } from '../../src/knowledge/interchange/lorebookPng';
import { corpusPath, EXAMPLE_CAMPAIGN } from '../support/corpora';
import { listTree, runCliCaptured, withIndexedSession } from '../support/interchange';

const LOREBOOKS = corpusPath('lorebooks');
const sample = (name: string): string => path.join(LOREBOOKS, name);
const SAMPLES = [
  'Eldoria.worldinfo.st-2024-09.json',
  'Eldoria.worldinfo.st-current.json',
  'Seraphina.card-v2.chara.json',
  'default_Seraphina.card-v2.png',
] as const;
const ELDORIA_TITLES = ['eldoria', 'shadowfang', 'glade', 'power'];
const ELDORIA_KEYS = [
  ['eldoria', 'wood', 'forest', 'magical forest'],
  ['shadowfang', 'beast', 'monster', 'monsters', 'beasts'],
  ['glade', 'safe haven', 'refuge'],
  ['power', 'magic', 'ability'],
];

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

describe('lorebook import: reading the real samples', () => {
  for (const name of SAMPLES) {
    it(`reads all four Eldoria entries of ${name} with their keys and text`, () => {
      const book = parseLorebook(name, fs.readFileSync(sample(name)));
      assert.deepEqual(
        book.entries.map((e) => e.keys),
        ELDORIA_KEYS,
      );
      assert.deepEqual(
        book.entries.map((e) => e.title),
        ELDORIA_TITLES,
      );
      assert.ok(book.entries.every((e) => e.enabled && !e.alwaysInclude));
      assert.ok(book.entries[0]!.content.startsWith('{{user}}: "What is Eldoria?"'));
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
    assert.deepEqual(fromPng.unmapped, fromJson.unmapped);
  });

  it('reports exactly the fields of the 2024 World Info file that have no equivalent, with counts', () => {
    const book = parseLorebook('old', fs.readFileSync(sample('Eldoria.worldinfo.st-2024-09.json')));
    assert.deepEqual(book.unmapped, [
      { field: 'selective', entries: 4, values: [{ value: 'false', count: 4 }] },
      { field: 'order', entries: 4, values: [{ value: '100', count: 4 }] },
      { field: 'position', entries: 4, values: [{ value: '0', count: 4 }] },
    ]);
  });

  it('reports every unmapped field of the current World Info field set and none of the mapped ones', () => {
    const book = parseLorebook('current', fs.readFileSync(sample('Eldoria.worldinfo.st-current.json')));
    const fields = book.unmapped.map((f) => f.field);
    for (const expected of ['probability', 'useProbability', 'position', 'order', 'group', 'depth', 'sticky', 'cooldown', 'delay', 'scanDepth', 'displayIndex']) {
      assert.ok(fields.includes(expected), `${expected} is reported`);
    }
    for (const mapped of ['uid', 'key', 'keysecondary', 'comment', 'content', 'constant', 'disable']) assert.ok(!fields.includes(mapped), `${mapped} is not reported`);
    assert.ok(book.unmapped.every((f) => f.entries === 4));
    assert.deepEqual(book.unmapped.find((f) => f.field === 'displayIndex')!.values.map((v) => v.value), ['0', '1', '2', '3']);
  });

  it('reports card extension fields one by one, and book-level fields', () => {
    const card = readJson('Seraphina.card-v2.chara.json') as { data: { character_book: Record<string, unknown> } };
    card.data.character_book.scan_depth = 3;
    const book = parseJsonValue('card', card);
    const fields = book.unmapped.map((f) => f.field);
    assert.ok(fields.includes('extensions.probability'));
    assert.ok(fields.includes('insertion_order'));
    assert.ok(fields.includes('book.scan_depth'));
    assert.ok(!fields.includes('extensions'));
  });
});

describe('lorebook import: mapping', () => {
  /** The real current-format file with the mapped flags varied entry by entry. */
  function variedWorldInfo(): Record<string, unknown> {
    const data = readJson('Eldoria.worldinfo.st-current.json') as { entries: Record<string, Record<string, unknown>> };
    Object.assign(data.entries['0']!, { constant: true });
    Object.assign(data.entries['1']!, { disable: true, keysecondary: ['night', 'Night', ' '], selectiveLogic: 0 });
    Object.assign(data.entries['2']!, { keysecondary: ['battle'], selectiveLogic: 2, comment: '' });
    Object.assign(data.entries['3']!, { key: ['power', '/mag(ic|e)/i'] });
    return data;
  }

  it('maps constant, disable, secondary keys and regex keys as documented', () => {
    const book = parseJsonValue('varied.json', variedWorldInfo());
    const [eldoria, shadowfang, glade, power] = book.entries;
    assert.equal(eldoria!.alwaysInclude, true);
    assert.equal(shadowfang!.enabled, false);
    assert.deepEqual(shadowfang!.qualifierKeys, ['night'], 'AND-logic secondary keys become tags, deduplicated');
    assert.deepEqual(glade!.qualifierKeys, [], 'NOT-logic secondary keys exclude, so they are not tags');
    assert.equal(glade!.title, 'glade', 'no comment: the first key is the title');
    assert.deepEqual(power!.keys, ['power']);
    const report = new Map(book.unmapped.map((f) => [f.field, f]));
    assert.deepEqual(report.get('secondary key (exclusion)')!.values, [{ value: '"battle"', count: 1 }]);
    assert.deepEqual(report.get('key (regular expression)')!.values, [{ value: '"/mag(ic|e)/i"', count: 1 }]);
  });

  it('reads a NovelAI lorebook: displayName, keys, forceActivation, enabled, category', () => {
    const book = parseJsonValue('world.lorebook', {
      lorebookVersion: 5,
      entries: [
        {
          text: 'The Shadowfangs hunt by night.',
          contextConfig: { prefix: '', suffix: '\n', tokenBudget: 1, reservedTokens: 0, budgetPriority: 400, trimDirection: 'trimBottom', insertionType: 'newline', maximumTrimType: 'sentence', insertionPosition: -1 },
          lastUpdatedAt: 1700000000000,
          displayName: 'Shadowfangs',
          id: 'a1b2',
          keys: ['shadowfang', 'beast'],
          searchRange: 1000,
          enabled: true,
          forceActivation: true,
          keyRelative: false,
          nonStoryActivatable: false,
          category: 'c1',
          loreBiasGroups: [],
        },
        { text: 'Old lore.', displayName: '', id: 'z9', keys: ['glade'], enabled: false, forceActivation: false },
      ],
      settings: { orderByKeyLocations: false },
      categories: [{ id: 'c1', name: 'Creatures', enabled: true }],
    });
    assert.equal(book.format, 'novelai');
    const [fangs, glade] = book.entries;
    assert.deepEqual(
      { title: fangs!.title, keys: fangs!.keys, always: fangs!.alwaysInclude, tags: fangs!.tags, id: fangs!.sourceId },
      { title: 'Shadowfangs', keys: ['shadowfang', 'beast'], always: true, tags: ['Creatures'], id: 'a1b2' },
    );
    assert.equal(glade!.enabled, false);
    assert.equal(glade!.title, 'glade');
    const fields = book.unmapped.map((f) => f.field);
    assert.ok(fields.includes('contextConfig.budgetPriority') && fields.includes('searchRange') && fields.includes('book.settings'));
  });

  it('reads a standalone V3 lorebook and a bare character_book', () => {
    const card = readJson('Seraphina.card-v2.chara.json') as { data: { character_book: Record<string, unknown> } };
    const v3 = parseJsonValue('book.json', { spec: 'lorebook_v3', data: card.data.character_book });
    assert.equal(v3.format, 'character-book');
    assert.equal(v3.entries.length, 4);
    assert.equal(parseJsonValue('bare.json', card.data.character_book).entries.length, 4);
  });

  it('makes portable file names from any title', () => {
    assert.equal(portableSlug('../../etc/passwd'), 'etc-passwd');
    assert.equal(portableSlug('CON'), 'con-entry');
    assert.equal(portableSlug('Ünïcödé Façade'), 'unicode-facade');
    assert.equal(portableSlug('龍の森'), 'entry');
    assert.equal(portableSlug('a'.repeat(200)).length, 60);
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

  it('writes one file per entry with front matter and the entry text verbatim as the body', () => {
    const result = importLorebookFile(sample('default_Seraphina.card-v2.png'), { campaignRoot: campaign, class: 'canon' });
    assert.deepEqual(
      result.written.map((w) => w.path),
      ['lore/eldoria.md', 'lore/shadowfang.md', 'lore/glade.md', 'lore/power.md'],
    );
    const source = parseLorebook('png', fs.readFileSync(sample('default_Seraphina.card-v2.png')));
    for (const [i, written] of result.written.entries()) {
      const { meta, body } = readEntryFile(path.join(campaign, written.path));
      assert.equal(body, source.entries[i]!.content);
      assert.deepEqual(meta.entities, ELDORIA_KEYS[i]);
      assert.equal(meta.class, 'canon');
      assert.equal(meta.title, ELDORIA_TITLES[i]);
      assert.equal(meta.always_include, undefined);
      assert.equal(meta.enabled, undefined);
      assert.match(String(meta.notes), /default_Seraphina\.card-v2\.png \(Eldoria\), entry \d/);
    }
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

  it('gives entries with the same title distinct names', () => {
    const data = readJson('Eldoria.worldinfo.st-2024-09.json') as { entries: Record<string, Record<string, unknown>> };
    for (const entry of Object.values(data.entries)) entry.comment = 'Same';
    const file = path.join(dir, 'same.json');
    fs.writeFileSync(file, JSON.stringify(data));
    const result = importLorebookFile(file, { campaignRoot: campaign, class: 'canon' });
    assert.deepEqual(
      result.written.map((w) => w.path),
      ['lore/same.md', 'lore/same-2.md', 'lore/same-3.md', 'lore/same-4.md'],
    );
  });

  it('writes front matter the knowledge importer reads as mapped: class, entities, tags, always_include, enabled', async () => {
    const data = readJson('Eldoria.worldinfo.st-current.json') as { entries: Record<string, Record<string, unknown>> };
    Object.assign(data.entries['0']!, { constant: true });
    Object.assign(data.entries['1']!, { disable: true, keysecondary: ['night'], selectiveLogic: 3 });
    const file = path.join(dir, 'Eldoria varied.json');
    fs.writeFileSync(file, JSON.stringify(data));
    importLorebookFile(file, { campaignRoot: campaign, class: 'reference', folder: 'lore/eldoria' });
    const store = KnowledgeStore.inMemory('westhaven');
    const report = await importCampaign(loadCampaign(campaign), store);
    const lore = report.files.filter((f) => f.path.startsWith('lore/'));
    assert.deepEqual(lore.map((f) => [f.path, f.outcome, f.issues.length]), [
      ['lore/eldoria/eldoria.md', 'indexed', 0],
      ['lore/eldoria/glade.md', 'indexed', 0],
      ['lore/eldoria/power.md', 'indexed', 0],
      ['lore/eldoria/shadowfang.md', 'indexed', 0],
    ]);
    const eldoria = store.getSourceByPath('lore/eldoria/eldoria.md')!;
    assert.deepEqual(
      { class: eldoria.class, origin: eldoria.classOrigin.kind, title: eldoria.title, entities: eldoria.entities, always: eldoria.alwaysInclude, enabled: eldoria.enabled },
      { class: 'reference', origin: 'front-matter', title: 'eldoria', entities: ELDORIA_KEYS[0], always: true, enabled: true },
    );
    const shadowfang = store.getSourceByPath('lore/eldoria/shadowfang.md')!;
    assert.equal(shadowfang.enabled, false);
    assert.deepEqual(shadowfang.tags, ['night']);
    store.close();
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
      ['a PNG that is not a card', () => Buffer.concat([png().subarray(0, 33), png().subarray(png().length - 12)]), /no `ccv3` or `chara`/],
      ['a PNG whose chara chunk is not base64', () => withChunkBeforeIend(Buffer.concat([png().subarray(0, 33), png().subarray(png().length - 12)]), pngChunk('tEXt', Buffer.from('chara\0{not base64}', 'latin1'))), /not base64/],
      ['binary that is not a PNG', () => Buffer.from([0xff, 0xfe, 0x00, 0x81, 0x82]), /neither a PNG nor UTF-8/],
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
        assert.throws(() => importLorebookFile(sample(SAMPLES[0]), { campaignRoot: campaign, class: 'canon', folder }), /plain path inside the campaign/);
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
    assert.deepEqual(book.entries[0]!.keys, ['v3 only key']);
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

  it('imports from inside the campaign and prints the field report', async () => {
    const { code, stdout } = await cli(['import-lorebook', sample('Eldoria.worldinfo.st-2024-09.json'), '--class', 'inspiration']);
    assert.equal(code, 0);
    assert.match(stdout, /Imported 4 entries from SillyTavern World Info/);
    assert.match(stdout, /position +4× +0×4/);
    assert.equal(readEntryFile(path.join(campaign, 'lore/power.md')).meta.class, 'inspiration');
  });

  it('answers --json with the written files and the report', async () => {
    const { code, stdout } = await cli(['import-lorebook', sample('Seraphina.card-v2.chara.json'), '--class', 'canon', '--folder', 'lore/seraphina', '--json']);
    assert.equal(code, 0);
    const result = JSON.parse(stdout) as { written: { path: string }[]; unmapped: { field: string }[] };
    assert.equal(result.written[0]!.path, 'lore/seraphina/eldoria.md');
    assert.ok(result.unmapped.some((f) => f.field === 'insertion_order'));
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

  it('exports only canon, and a lorebook imported as canon comes back with its keys, text and flags', async () => {
    const data = readJson('Eldoria.worldinfo.st-current.json') as { entries: Record<string, Record<string, unknown>> };
    Object.assign(data.entries['0']!, { constant: true });
    Object.assign(data.entries['1']!, { disable: true });
    const original = path.join(dir, 'eldoria.json');
    fs.writeFileSync(original, JSON.stringify(data));
    importLorebookFile(original, { campaignRoot: campaign, class: 'canon' });
    const out = path.join(dir, 'world.json');
    const result = await withIndexedSession(campaign, (session) => exportCampaignWorldInfo(session.store, out));

    const back = parseLorebook(out, fs.readFileSync(out));
    assert.equal(back.format, 'sillytavern-world-info');
    const byTitle = new Map(back.entries.map((e) => [e.title, e]));
    const before = parseLorebook(original, fs.readFileSync(original));
    for (const entry of before.entries) {
      const exported = byTitle.get(entry.title)!;
      assert.deepEqual(
        { keys: exported.keys, content: exported.content, always: exported.alwaysInclude, enabled: exported.enabled },
        { keys: entry.keys, content: entry.content, always: entry.alwaysInclude, enabled: entry.enabled },
        entry.title,
      );
    }
    const paths = result.entries.map((e) => e.path);
    assert.ok(paths.includes('characters/mara.md') && paths.includes('canon.md'));
    assert.ok(!paths.includes('reference.md') && !paths.includes('inspiration.md'), 'reference and inspiration stay out');
    assert.deepEqual(byTitle.get('Sister Mara')!.keys, ['Mara', 'Sister Mara']);
    assert.ok(!byTitle.get('Sister Mara')!.content.startsWith('---'), 'front matter is not part of the entry text');
    assert.deepEqual(result.keyedByTitle, ['rules.md']);
  });

  it('answers the CLI with --json and refuses to overwrite without --force', async () => {
    const first = await runCliCaptured(['export-lorebook', '--out', '../world.json', '--json'], campaign);
    assert.equal(first.code, 0, first.stderr);
    assert.ok((JSON.parse(first.stdout) as { entries: unknown[] }).entries.length > 0);
    const again = await runCliCaptured(['export-lorebook', '--out', '../world.json'], campaign);
    assert.equal(again.code, 3);
    assert.match(again.stderr, /world\.json: already exists/);
    assert.equal((await runCliCaptured(['export-lorebook', '--out', '../world.json', '--force'], campaign)).code, 0);
  });
});
