import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { loadCampaign } from '../../src/knowledge/campaign/campaign';
import { importCampaign } from '../../src/knowledge/indexing/importer';
import { KnowledgeStore } from '../../src/knowledge/indexing/store';
import { importLorebookFile } from '../../src/knowledge/interchange/lorebookImport';
import { retrieveKnowledge, searchKnowledge } from '../../src/knowledge/retrieval/retrieval';
import { decisionLine } from '../../src/knowledge/retrieval/retrievalFormat';
import { corpusPath } from '../support/corpora';

interface Campaign {
  root: string;
  store: KnowledgeStore;
  dispose: () => void;
}

/** A campaign folder with these files (and, optionally, a lorebook imported into `lore/`), indexed for real. */
async function campaignWith(files: Record<string, string>, lorebook?: string): Promise<Campaign> {
  const root = fs.mkdtempSync(path.join(os.tmpdir(), 'st-triggers-'));
  fs.writeFileSync(path.join(root, 'campaign.yaml'), 'id: triggers\ntitle: Triggers\ndefault_class: canon\n');
  for (const [file, text] of Object.entries(files)) {
    fs.mkdirSync(path.dirname(path.join(root, file)), { recursive: true });
    fs.writeFileSync(path.join(root, file), text);
  }
  if (lorebook) importLorebookFile(lorebook, { campaignRoot: root, class: 'canon' });
  const campaign = loadCampaign(root);
  const store = KnowledgeStore.open(campaign);
  await importCampaign(campaign, store);
  return {
    root,
    store,
    dispose: () => {
      store.close();
      fs.rmSync(root, { recursive: true, force: true });
    },
  };
}

const paths = async (store: KnowledgeStore, text: string) => (await searchKnowledge(store, text)).hits.map((h) => h.sourcePath);

describe('triggers: a mentioned key or name makes its entry eligible', () => {
  describe('the Eldoria World Info, imported as SillyTavern wrote it', () => {
    let eldoria: Campaign;
    let book: { key: string[]; content: string; comment: string }[];
    before(async () => {
      const file = corpusPath('lorebooks', 'Eldoria.worldinfo.st-current.json');
      book = Object.values((JSON.parse(fs.readFileSync(file, 'utf8')) as { entries: Record<string, { key: string[]; content: string; comment: string }> }).entries);
      eldoria = await campaignWith({}, file);
    });
    after(() => eldoria.dispose());

    it('finds power.md for "ability", a key its text never uses, and says the key was mentioned', async () => {
      const { hits } = await searchKnowledge(eldoria.store, 'ability');
      assert.equal(hits[0]?.sourcePath, 'lore/power.md');
      assert.match(hits[0]!.reason, /^key 'ability' mentioned/);
    });

    it('fires every entry on each of its keys that is not in its text, as SillyTavern does', async () => {
      const absent = book.flatMap((entry) => entry.key.filter((k) => !entry.content.toLowerCase().includes(k.toLowerCase())).map((key) => ({ key, entry })));
      assert.ok(absent.length >= 3, `the book has keys its entries never use (${absent.length})`);
      for (const { key, entry } of absent) {
        const found = await paths(eldoria.store, `Tell me about the ${key}.`);
        assert.ok(found.includes(`lore/${entry.comment}.md`), `'${key}' should fire ${entry.comment}, got ${JSON.stringify(found)}`);
      }
    });

    it('fires nothing for a question that mentions no key, and says what the campaign lacks', async () => {
      const { hits, record } = await searchKnowledge(eldoria.store, 'How do I renew my passport online?');
      assert.deepEqual(hits, []);
      assert.match(record.abstention ?? '', /'passport'/);
    });
  });

  describe('keys under the front matter options the lorebook import writes', () => {
    let lore: Campaign;
    before(async () => {
      lore = await campaignWith({
        'hoard.md': '---\ntitle: The hoard\nkeys: [dragon]\nsecondary_keys: [gold, treasure]\nselective_logic: and_all\n---\nUnder the mountain lies a heap of coins.\n',
        'peace.md': '---\ntitle: The truce\nkeys: [dragon]\nsecondary_keys: [war]\nselective_logic: not_any\n---\nThe wyrms keep a truce with the valley.\n',
        'ash.md': '---\ntitle: Ash\nkeys: [Ash]\ncase_sensitive: true\n---\nThe ranger of the north road.\n',
        'elves.md': '---\ntitle: Elves\nkeys: [elf]\nmatch_whole_words: true\n---\nThe fair folk of the western woods.\n',
        'off.md': '---\ntitle: Off\nenabled: false\nkeys: [comet]\n---\nThe sky burns once a century.\n',
      });
    });
    after(() => lore.dispose());

    it('applies the selective logic to the secondary keys', async () => {
      assert.ok(!(await paths(lore.store, 'a dragon with gold')).includes('hoard.md'), 'AND ALL needs every secondary key');
      assert.ok((await paths(lore.store, 'a dragon with gold and treasure')).includes('hoard.md'));
      assert.ok((await paths(lore.store, 'a dragon in the valley')).includes('peace.md'));
      assert.ok(!(await paths(lore.store, 'a dragon goes to war')).includes('peace.md'), 'NOT ANY stops at a secondary key');
    });

    it('honours case sensitivity and whole words', async () => {
      assert.ok((await paths(lore.store, 'Ash waits at the gate')).includes('ash.md'));
      assert.ok(!(await paths(lore.store, 'the ash of the fire')).includes('ash.md'));
      assert.ok((await paths(lore.store, 'an elf at the gate')).includes('elves.md'));
      assert.ok(!(await paths(lore.store, 'a book on the shelf')).includes('elves.md'));
    });

    it('matches a whole-word key in Chinese or Russian prose as SillyTavern does, whose word boundary is any non-ASCII character', async () => {
      // SillyTavern bounds a whole-word key with `\W` in a regular expression without the `u` flag: every
      // character outside [A-Za-z0-9_] is a boundary, so 宗门 fires inside 我们的宗门很大 and орк inside орки.
      const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'st-wi-'));
      const book = path.join(dir, 'world.json');
      const entry = (uid: number, key: string, comment: string, content: string) => ({
        uid, key: [key], keysecondary: [], comment, content, constant: false, selective: true, selectiveLogic: 0, disable: false, caseSensitive: null, matchWholeWords: true,
      });
      fs.writeFileSync(book, JSON.stringify({ entries: { 0: entry(0, '宗门', '青云门', '青云门是天下第一大派。'), 1: entry(1, 'орк', 'Орки', 'Живут в горах за рекой.'), 2: entry(2, 'elf', 'Elves', 'The fair folk of the west.') } }));
      const c = await campaignWith({}, book);
      try {
        for (const [turn, file, key] of [
          ['我们的宗门很大', 'lore/青云门.md', '宗门'],
          ['Орки напали на деревню', 'lore/орки.md', 'орк'],
        ]) {
          const hit = (await searchKnowledge(c.store, turn!)).hits.find((h) => h.sourcePath === file);
          assert.match(hit?.reason ?? 'not found', new RegExp(`^key '${key}' mentioned`), `${turn}: ${JSON.stringify(await paths(c.store, turn!))}`);
        }
        assert.ok(!(await paths(c.store, 'a book on the shelf')).includes('lore/elves.md'), 'an ASCII letter still joins a word');
      } finally {
        c.dispose();
        fs.rmSync(dir, { recursive: true, force: true });
      }
    });

    it('never admits a disabled entry, and says its key was mentioned but the source is off', async () => {
      const { hits, record } = await searchKnowledge(lore.store, 'the comet returns');
      assert.ok(!hits.some((h) => h.sourcePath === 'off.md'));
      const decision = record.candidates.find((c) => c.sourcePath === 'off.md');
      assert.match(decision?.reason ?? '', /key 'comet' mentioned, but its source off\.md is disabled/);
    });
  });

  it("fires a canon entity on its title or alias, never a reference page on its title", async () => {
    const c = await campaignWith({
      'people/tuvdak.md': '---\ntitle: Tuvdak the Magnificent\nentities: [the Fire King]\n---\nHe rules the caldera from a throne of basalt.\n',
      'rules/combat.md': '---\ntitle: Combat\nclass: reference\n---\nRounds last six seconds; everyone rolls initiative.\n',
    });
    try {
      const byTitle = (await searchKnowledge(c.store, 'We bow before Tuvdak the Magnificent')).hits;
      assert.equal(byTitle[0]?.sourcePath, 'people/tuvdak.md');
      assert.match(byTitle[0]!.reason, /name 'Tuvdak the Magnificent' mentioned/);
      assert.ok((await paths(c.store, 'an audience with the fire king')).includes('people/tuvdak.md'));
      assert.ok(!(await paths(c.store, 'combat')).includes('rules/combat.md'), 'a reference title is not a trigger (and the word alone is not in its text)');
    } finally {
      c.dispose();
    }
  });
});

describe('[[wiki link]] targets as triggers, on Torys pages', () => {
  let vault: Campaign;
  before(async () => {
    // Firecomb's page as Torys wrote it, and the page it links as [[Sibal]] kept as an Obsidian vault keeps
    // it: named by its file, without front matter, so no title or alias of its own names it.
    const sibal = fs.readFileSync(corpusPath('torys', 'world', 'tumulted-sea', 'sibal', 'index.md'), 'utf8').replace(/^---\n[\s\S]*?\n---\n/, '');
    vault = await campaignWith({
      'places/firecomb.md': fs.readFileSync(corpusPath('torys', 'world', 'tumulted-sea', 'leuber', 'firecomb.md'), 'utf8'),
      'places/Sibal.md': sibal,
    });
  });
  after(() => vault.dispose());

  it('fires the page other files link to when the turn mentions its link target, and says so', async () => {
    const { sections } = await retrieveKnowledge(vault.store, { input: 'We take a ship to Sibal to sell the furs', stage: 'narrator', budgets: { alwaysInclude: 600, canon: 1500, reference: 900, inspiration: 300 } });
    const sibal = sections.canon.find((p) => p.sourcePath === 'places/Sibal.md');
    assert.ok(sibal, JSON.stringify(sections.canon.map((p) => p.sourcePath)));
    assert.match(sibal.reason, /^'Sibal' mentioned, which other files link to as \[\[Sibal\]\]/);
  });

  it('fires nothing on a link whose target the turn does not mention', async () => {
    const { hits } = await searchKnowledge(vault.store, 'the rain over the harbour');
    assert.ok(!hits.some((h) => h.reason.includes('link to')), hits.map((h) => h.reason).join('\n'));
  });
});

describe('text kept in front matter', () => {
  let torys: Campaign;
  before(async () => {
    const files: Record<string, string> = {};
    for (const name of ['nightfall.md', 'stormstruck.md', 'warstorm.md']) files[`stories/${name}`] = fs.readFileSync(corpusPath('torys', 'stories', name), 'utf8');
    torys = await campaignWith(files);
  });
  after(() => torys.dispose());

  it('indexes the three Torys stories that keep their adventure in front matter', () => {
    for (const source of torys.store.listSources()) {
      assert.equal(source.lexicalState, 'ready', source.path);
      assert.ok(!source.issues.some((i) => i.code === 'no-text'), `${source.path}: ${JSON.stringify(source.issues)}`);
      assert.ok(torys.store.listPassages(source.id).length > 5, source.path);
    }
  });

  it('finds a sentence of a chapter and points at the lines it is written on, under the chapter title', async () => {
    const { hits } = await searchKnowledge(torys.store, 'merfolk queen demands the ships leave the harbour', { limit: 3 });
    const hit = hits.find((h) => h.sourcePath === 'stories/stormstruck.md');
    assert.ok(hit, JSON.stringify(hits.map((h) => h.sourcePath)));
    assert.deepEqual(hit.headingPath, ['Rising of the Seas']);
    const lines = fs.readFileSync(path.join(torys.root, 'stories', 'stormstruck.md'), 'utf8').split('\n');
    const first = hit.text.split('\n')[0]!.slice(0, 40);
    assert.ok(lines[hit.startLine - 1]!.includes(first.replace(/'/g, "''")) || lines[hit.startLine - 1]!.includes(first), `line ${hit.startLine} is '${lines[hit.startLine - 1]}', passage starts '${first}'`);
  });

  it('tells the passages of one chapter apart in its decisions, by the lines they are written on', async () => {
    // nightfall.md's chapter "News" is four passages: "used · stories/nightfall.md › News" twice and "no room
    // left · stories/nightfall.md › News" once would not say which was left out.
    const { record } = await retrieveKnowledge(torys.store, {
      input: 'I walk into the Old Prince and ask Natra about the wolves',
      stage: 'narrator',
      budgets: { alwaysInclude: 600, canon: 1500, reference: 900, inspiration: 300 },
    });
    const places = record.candidates.map((d) => decisionLine(d).replace(/^[^·]+· /, '').split(': ')[0]!);
    assert.ok(places.filter((p) => p.startsWith('stories/nightfall.md') && p.endsWith(' › News')).length > 1, places.join('\n'));
    assert.equal(new Set(places).size, places.length, places.join('\n'));
    assert.ok(places.every((p) => /^stories\/\w+\.md:\d+-\d+( › |$)/.test(p)), places.join('\n'));
    // A turn played before lines were recorded keeps its decisions as they were stored: named without lines.
    const { startLine, endLine, ...stored } = record.candidates[0]!;
    assert.ok(startLine! <= endLine!);
    assert.match(decisionLine(stored), /^[^·]+· stories\/\w+\.md( › [^:]+)?: \S/, decisionLine(stored));
  });

  it('puts the markdown headings written inside a chapter into the heading trail, not into the text', () => {
    const passages = (file: string) => torys.store.listPassages(torys.store.listSources().find((s) => s.path === `stories/${file}`)!.id);
    const holding = (file: string, words: string) => {
      const passage = passages(file).find((p) => p.text.includes(words));
      assert.ok(passage, `${file}: no passage holds '${words}'`);
      return passage;
    };
    // nightfall.md's chapter "Investigation" has `### The Farm` and `### The Forest` in its `content:`.
    assert.deepEqual(holding('nightfall.md', 'The farm is about an hour away').headingPath, ['Investigation', 'The Farm']);
    assert.doesNotMatch(holding('nightfall.md', 'The main track continues towards').text, /### The Forest/);
    assert.deepEqual(holding('stormstruck.md', 'Also sometimes known as the Rat Tail').headingPath.slice(0, 2), ['Preparation', 'The Redtail']);
  });
});

describe('retrieval explains itself in plain words', () => {
  it('says why each passage was used or left out, once, with no internal words or ids', async () => {
    const bell = 'The bell of the old abbey rings at midnight, and the monks walk to the crypt with candles.';
    const c = await campaignWith({
      'abbey.md': `# Abbey\n\n${bell}\n`,
      'abbey-copy.md': `# Abbey again\n\n${bell}\n`,
      'crypt.md': `# Crypt\n\n${'The crypt under the abbey holds the bones of the founders, each in a niche, each named. '.repeat(12)}\n`,
      'off.md': '---\nenabled: false\n---\n# Off\n\nThe abbey crypt key hangs in the kitchen.\n',
      'mill.md': '# Mill\n\nThe abbey buys flour from the mill by the river.\n',
    });
    try {
      const { record } = await retrieveKnowledge(c.store, {
        input: 'I follow the monks down to the abbey crypt',
        stage: 'narrator',
        budgets: { alwaysInclude: 100, canon: 120, reference: 100, inspiration: 100 },
      });
      const outcomes = new Set(record.candidates.map((d) => d.outcome));
      for (const outcome of ['selected', 'duplicate', 'over-budget', 'disabled'] as const) assert.ok(outcomes.has(outcome), `${outcome} among ${[...outcomes].join(', ')}`);
      const lines = record.candidates.map(decisionLine);
      for (const line of lines) {
        assert.doesNotMatch(line, /selected|not-relevant|not relevant: |result \d|[0-9a-f]{24}/, line);
        assert.doesNotMatch(line, /: $|; ;/, `a reason is never empty: ${line}`);
      }
      assert.ok(lines.some((l) => /^used · /.test(l)));
      assert.ok(lines.some((l) => /^repeats a passage that was used · abbey(-copy)?\.md:3-3 › Abbey.*: .*near-duplicate of abbey(-copy)?\.md › Abbey/.test(l)), lines.join('\n'));
      assert.ok(lines.some((l) => /^no room left in its section · .*over the canon budget/.test(l)), lines.join('\n'));
      assert.ok(lines.some((l) => /^its source is turned off · off\.md:6-6 › Off: matched .*, but its source off\.md is disabled/.test(l)), lines.join('\n'));
      const search = await searchKnowledge(c.store, 'the abbey crypt');
      assert.ok(search.hits.every((h) => !/result \d/.test(h.reason)), search.hits.map((h) => h.reason).join('\n'));
    } finally {
      c.dispose();
    }
  });
});
