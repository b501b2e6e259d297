import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { loadCampaign } from '../../src/knowledge/campaign/campaign';
import { analyzeStoreConflicts } from '../../src/knowledge/conflicts';
import { EntityModel, entityLinks, entitySourcesFromStore, mentioningSources, findWikiLinks, openLinkPrefix, renamedFile, renameEdits, type FileEdit } from '../../src/knowledge/entities';
import { importCampaign } from '../../src/knowledge/indexing/importer';
import { KnowledgeStore } from '../../src/knowledge/indexing/store';
import { PlayStore } from '../../src/story/playStore';
import { transcriptMarkdown } from '../../src/story/transcript';
import { corpusPath, EXAMPLE_CAMPAIGN } from '../support/corpora';
import { importCorpora } from '../support/knowledgeFixtures';

/** A campaign folder indexed as the extension indexes it; the model reads the index, as the editor does. */
async function indexedModel(root: string): Promise<{ model: EntityModel; store: KnowledgeStore }> {
  const campaign = loadCampaign(root);
  const store = KnowledgeStore.open(campaign);
  await importCampaign(campaign, store);
  return { model: new EntityModel(entitySourcesFromStore(store)), store };
}

function applyEdits(root: string, edits: readonly FileEdit[]): void {
  for (const file of new Set(edits.map((e) => e.path))) {
    const fileEdits = edits.filter((e) => e.path === file);
    const full = path.join(root, file);
    const lines = fs.readFileSync(full, 'utf8').split('\n');
    // Right to left, so earlier columns stay valid.
    for (const e of [...fileEdits].sort((a, b) => b.line - a.line || b.start - a.start)) {
      lines[e.line] = lines[e.line]!.slice(0, e.start) + e.newText + lines[e.line]!.slice(e.end);
    }
    fs.writeFileSync(full, lines.join('\n'));
  }
}

const TY = 'stories/tuvdaks-gift.md';
const BEKEBEL = 'world/oro-oro-ponoro-poron/bekebel/index.md';
const CHEWAN = 'world/tumulted-sea/sibal/lord-chewan.md';
const CALAS = 'world/tumulted-sea/sibal/lord-calas.md';
const TANTAN = 'world/oro-oro-ponoro-poron/bekebel/tantan-the-inventor.md';

describe('entities: the Torys setting bible as a language', () => {
  let root: string;
  let model: EntityModel;
  let store: KnowledgeStore;

  before(async () => {
    root = fs.mkdtempSync(path.join(os.tmpdir(), 'entities-torys-'));
    fs.cpSync(corpusPath('torys'), root, { recursive: true });
    fs.writeFileSync(path.join(root, 'campaign.yaml'), 'id: torys\ntitle: Torys\ndefault_class: canon\n');
    // A writer declares the short name the stories use for Tantan.
    const tantan = path.join(root, TANTAN);
    fs.writeFileSync(tantan, fs.readFileSync(tantan, 'utf8').replace(/^title: .*$/m, '$&\nentities: [Tantan]'));
    ({ model, store } = await indexedModel(root));
  });
  after(() => {
    store.close();
    fs.rmSync(root, { recursive: true, force: true });
  });

  it('resolves `[[Heading:Page]]` to the heading on that page, and a plain link to the page title', () => {
    const lines = fs.readFileSync(path.join(root, TY), 'utf8').split('\n');
    const line = lines.findIndex((l) => l.includes('[[Bekebel Citadel:Bekebel]]'));
    const citadel = model.resolveLink(findWikiLinks(lines[line]!, line).find((l) => l.target === 'Bekebel')!)!;
    assert.equal(citadel.entity?.display, 'Bekebel');
    assert.equal(citadel.path, BEKEBEL);
    assert.equal(fs.readFileSync(path.join(root, BEKEBEL), 'utf8').split('\n')[citadel.line], '## Bekebel Citadel');

    const chewan = fs.readFileSync(path.join(root, CHEWAN), 'utf8').split('\n');
    const calasLine = chewan.findIndex((l) => l.includes('[[Lord Calas]]'));
    const calas = model.resolveLink(findWikiLinks(chewan[calasLine]!, calasLine).find((l) => l.target === 'Lord Calas')!)!;
    assert.equal(calas.path, CALAS);
    assert.equal(fs.readFileSync(path.join(root, CALAS), 'utf8').split('\n')[calas.line], 'title: Lord Calas', 'Torys pages have no title heading: the title line is the definition');
  });

  it('finds links that name nothing, and only those', () => {
    const unresolved = model.unresolvedLinks(fs.readFileSync(path.join(root, CHEWAN), 'utf8')).map((l) => l.target);
    assert.deepEqual(unresolved, ['Trapwater Bay'], 'Trapwater Bay has no page or heading anywhere in Torys; Lord Calas has a page');
  });

  it('classifies entities by what the writer declared (`layout: character`), and only canon defines them', () => {
    assert.equal(model.resolveName('Lord Chewan')?.kind, 'character');
    assert.equal(model.resolveName('Bekebel')?.kind, 'other');
    assert.match(model.resolveName('Lord Chewan')!.summary, /^Lord Chewan is the harbourmaster of Sibal's Trapwater Bay\./);
  });

  it('finds every mention of an entity: links, names, and declared aliases, never inside another word', () => {
    const calas = model.mentionsOf(model.resolveName('Lord Calas')!.key);
    assert.ok(calas.some((m) => m.path === CHEWAN && m.via === 'link' && m.text === 'Lord Calas'));
    assert.ok(calas.some((m) => m.path === CALAS && m.declaration), 'its own title is a declaration');
    const tantan = model.mentionsOf(model.resolveName('Tantan')!.key).filter((m) => !m.declaration);
    assert.ok(tantan.some((m) => m.path === 'stories/tantans-dying-wish.md' && m.text === 'Tantan'), 'the declared alias is found in a story');
    const lines = new Map<string, string[]>();
    for (const m of model.allMentions()) {
      const text = (lines.get(m.path) ?? lines.set(m.path, fs.readFileSync(path.join(root, m.path), 'utf8').split('\n')).get(m.path)!)[m.line]!;
      assert.equal(text.slice(m.start, m.end), m.text, `${m.path}:${m.line + 1}`);
      assert.doesNotMatch(text[m.start - 1] ?? ' ', /[\p{L}\p{N}]/u, `${m.path}:${m.line + 1} starts inside a word`);
      assert.doesNotMatch(text[m.end] ?? ' ', /[\p{L}\p{N}]/u, `${m.path}:${m.line + 1} ends inside a word`);
    }
  });

  it('counts an entity\'s mentions one way for hover and Codex: every use, the files holding them, and those besides its own page', () => {
    const key = model.resolveName('Lord Calas')!.key;
    const uses = model.mentionsOf(key).filter((m) => !m.declaration);
    const usage = model.usage(key);
    assert.equal(usage.mentions, uses.length);
    assert.deepEqual(usage.files.sort(), [...new Set(uses.map((m) => m.path))].sort());
    assert.ok(usage.elsewhere.includes(CHEWAN), 'the page that links to him');
    assert.ok(!usage.elsewhere.includes(CALAS), 'his own page is not "elsewhere"');
    assert.ok(usage.files.length >= usage.elsewhere.length);
  });

  it('rebuilds after a change from the previous model, reusing unchanged files, with the answers of a model built afresh', async () => {
    const campaign = loadCampaign(root);
    const story = path.join(root, TY);
    const calas = path.join(root, CALAS);
    const originals = new Map([story, calas].map((f) => [f, fs.readFileSync(f, 'utf8')]));
    const rebuilt = (previous: EntityModel) => new EntityModel(entitySourcesFromStore(store, previous.sources), previous);
    const afresh = () => new EntityModel(entitySourcesFromStore(store));
    const calasMentions = (m: EntityModel) => m.mentionsOf(m.resolveName('Lord Calas')!.key).length;
    try {
      model.allMentions();
      // One story gains a sentence: only that file is read and scanned again.
      fs.appendFileSync(story, '\nLord Calas sent word to [[Lord Chewan]].\n');
      await importCampaign(campaign, store);
      const afterStory = rebuilt(model);
      assert.equal(afterStory.sources.filter((s) => !model.sources.includes(s)).map((s) => s.path).join(), TY);
      assert.deepEqual(afterStory.allMentions(), afresh().allMentions());
      assert.equal(calasMentions(afterStory), calasMentions(model) + 1);

      // A new alias changes what every file mentions: all mentions are found again, none kept stale.
      fs.writeFileSync(calas, originals.get(calas)!.replace(/^title: .*$/m, '$&\nentities: [Calas]'));
      await importCampaign(campaign, store);
      const afterAlias = rebuilt(afterStory);
      assert.deepEqual(afterAlias.allMentions(), afresh().allMentions());
      assert.ok(calasMentions(afterAlias) > calasMentions(afterStory), 'the alias is found in files that did not change');
    } finally {
      for (const [file, text] of originals) fs.writeFileSync(file, text);
      await importCampaign(campaign, store);
    }
  });

  it('renames one spelling across the campaign: alias, title, links and prose, losing no mention', async () => {
    const key = model.resolveName('Tantan')!.key;
    const before = model.mentionsOf(key).length;
    const edits = renameEdits(model, key, 'Tantan', 'Tanetan');
    const files = new Set(edits.map((e) => e.path));
    assert.ok(files.has(TANTAN) && files.has('stories/tantans-dying-wish.md'));
    applyEdits(root, edits);
    const text = fs.readFileSync(path.join(root, TANTAN), 'utf8');
    assert.match(text, /^title: Tanetan the Inventor$/m);
    assert.match(text, /^entities: \[Tanetan\]$/m);
    store.close();
    ({ model, store } = await indexedModel(root));
    const renamed = model.resolveName('Tanetan');
    assert.ok(renamed, 'the new spelling names the entity');
    assert.equal(model.resolveName('Tantan'), undefined, 'the old spelling is gone');
    assert.equal(model.mentionsOf(renamed.key).length, before, 'every mention still points at the entity');
    assert.deepEqual(model.unresolvedLinks(fs.readFileSync(path.join(root, 'stories/tantans-dying-wish.md'), 'utf8')).filter((l) => /Tan/.test(l.target)), []);
  });
});

describe('entities: the example campaign', () => {
  let root: string;
  let model: EntityModel;
  let store: KnowledgeStore;

  before(async () => {
    root = fs.mkdtempSync(path.join(os.tmpdir(), 'entities-example-'));
    fs.cpSync(EXAMPLE_CAMPAIGN, root, { recursive: true });
    ({ model, store } = await indexedModel(root));
  });
  after(() => {
    store.close();
    fs.rmSync(root, { recursive: true, force: true });
  });

  it('offers to rename the file named after the old name, in its folder, and no other', () => {
    const mara = model.resolveName('Mara')!.key;
    assert.deepEqual(renamedFile(model, mara, 'Mara', 'Marra'), { from: 'characters/mara.md', to: 'characters/marra.md' });
    // The file is not named after 'Sister Mara'; and 'mara' names the same file as 'Mara'.
    assert.equal(renamedFile(model, mara, 'Sister Mara', 'Sister Marra'), undefined);
    assert.equal(renamedFile(model, mara, 'Mara', 'MARA'), undefined);
  });

  it('keys entities as the conflict analysis does, so facts and conflicts attach to them', () => {
    const analysis = analyzeStoreConflicts(store);
    const mara = model.resolveName('Mara')!;
    assert.deepEqual(
      analysis.facts.filter((f) => f.entityKey === mara.key).map((f) => f.attribute),
      ['Age', 'Role', 'Home'],
    );
    assert.equal(mara.kind, 'character');
    assert.equal(model.resolveName('the Abbey')?.kind, 'place');
    assert.match(mara.summary, /^Mara came to the Abbey as a foundling/, 'the summary is prose, not the fact list');
    const taverns = model.resolveName('Medieval Taverns and Inns')!;
    assert.equal(taverns.canon, false, 'a Reference page names no story entity');
    assert.deepEqual(model.mentionsIn('notes.md', 'Medieval Taverns and Inns, says the book.'), []);
    assert.equal(model.resolveLink(findWikiLinks('[[Medieval Taverns and Inns]]', 0)[0]!)?.path, 'reference.md', 'but a link may still name it');
  });

  it("shows the summary the writer gave a page in its front matter, else the page's first paragraph", () => {
    const text = fs.readFileSync(path.join(root, 'characters', 'mara.md'), 'utf8').replace('tags: [abbey, npc]', 'tags: [abbey, npc]\nsummary: "The Abbey\'s healer, who **reads** the old script."');
    const source = entitySourcesFromStore(store).find((s) => s.path === 'characters/mara.md')!;
    const others = entitySourcesFromStore(store).filter((s) => s.path !== 'characters/mara.md');
    const withSummary = new EntityModel([...others, { ...source, text, sha256: 'edited' }]);
    assert.equal(withSummary.resolveName('Mara')!.summary, "The Abbey's healer, who reads the old script.");
    assert.match(model.resolveName('Mara')!.summary, /^Mara came to the Abbey as a foundling/);
  });

  it("joins two entities when one's file mentions the other, counting the mentions, never an entity to itself", () => {
    const mara = model.resolveName('Mara')!;
    const abbey = model.resolveName('the Abbey')!;
    const links = entityLinks(model);
    const abbeyToMara = links.find((l) => l.from === abbey.key && l.to === mara.key);
    assert.ok(abbeyToMara, "the Old Abbey's page names Mara: the graph joins them");
    const inAbbeyFile = model.mentionsOf(mara.key).filter((m) => abbey.definitions.some((d) => d.path === m.path) && !m.declaration);
    assert.equal(abbeyToMara.count, inAbbeyFile.length);
    assert.ok(links.every((l) => l.from !== l.to), 'no entity is joined to itself by its own page');
    const canon = new Set(model.canonEntities().map((e) => e.key));
    assert.ok(links.every((l) => canon.has(l.from) && canon.has(l.to)), 'only canon entities are joined (a reference page names no story entity)');
  });

  it('joins a Reference or Inspiration file to the canon entities it names, as a file, never as an entity', () => {
    const sources = entitySourcesFromStore(store);
    const mood = { path: 'mood/bells.md', title: 'Bells at night', class: 'inspiration' as const, entities: [], tags: [], text: '# Bells\n\nSister Mara hears them; so does [[Brother Aldric]], twice: Brother Aldric.\n' };
    const withMood = new EntityModel([...sources, mood]);
    const found = mentioningSources(withMood).find((s) => s.path === 'mood/bells.md');
    assert.ok(found, 'the mood piece names two canon entities');
    assert.equal(found.class, 'inspiration');
    const mara = withMood.resolveName('Mara')!;
    const aldric = withMood.resolveName('Brother Aldric')!;
    assert.deepEqual(
      found.links.map((l) => [l.from, l.to, l.count, l.linked]).sort(),
      [['mood/bells.md', aldric.key, 2, true], ['mood/bells.md', mara.key, 1, false]].sort(),
    );
    assert.ok(!withMood.canonEntities().some((e) => e.definitions.some((d) => d.path === 'mood/bells.md')), 'it defines no entity');
    assert.ok(mentioningSources(model).every((s) => s.class !== ('canon' as string) && s.links.length > 0), 'only non-canon files that name something');
  });

  it('reads a sentence-initial article as the same name, and renames it keeping the capital', () => {
    const abbey = model.resolveName('the Abbey')!;
    const text = 'The Abbey bell rang; the Abbey gate stayed shut. Abbeyfield is elsewhere.';
    const found = model.mentionsIn('notes.md', text).filter((m) => m.entityKey === abbey.key).map((m) => m.text);
    assert.deepEqual(found, ['The Abbey', 'the Abbey']);
    const edits = renameEdits(model, abbey.key, 'the Abbey', 'the Priory').filter((e) => e.path === 'places/old-abbey.md');
    assert.ok(edits.some((e) => e.newText === 'the Priory') && edits.every((e) => /^[Tt]he Priory$/.test(e.newText)));
  });

  it('names the entity under the cursor, in prose or inside a link, and completes an open link', () => {
    const line = 'Ask [[Sister Mara|the keeper]] or Brother Aldric.';
    assert.equal(model.entityAt('x.md', line, 0, 8)?.entity.display, 'Sister Mara');
    assert.equal(model.entityAt('x.md', line, 0, line.indexOf('Aldric'))?.entity.display, 'Brother Aldric');
    assert.equal(model.entityAt('x.md', line, 0, 1), undefined);
    assert.equal(openLinkPrefix('Ask [[Sis', 9), 'Sis');
    assert.equal(openLinkPrefix('Ask [[Sister Mara]] now', 22), undefined);
  });

  it('refuses a new name that would break links, naming the reason', () => {
    assert.throws(() => renameEdits(model, model.resolveName('Mara')!.key, 'Mara', 'Mara]] [[x'), /cannot be a name/);
    assert.throws(() => renameEdits(model, model.resolveName('Mara')!.key, 'Mara', '  '), /cannot be empty/);
  });
});

describe('entities: the SRD as reference beside Torys, whose entities include everyday words', () => {
  let library: Awaited<ReturnType<typeof importCorpora>>;
  let model: EntityModel;
  let torysAlone: EntityModel;

  before(async function () {
    this.timeout(120_000);
    library = await importCorpora('weak', { world: { corpus: corpusPath('torys'), class: 'canon' }, srd: { corpus: corpusPath('dnd-srd-5.1'), class: 'reference' } });
    const sources = entitySourcesFromStore(library.store);
    model = new EntityModel(sources);
    torysAlone = new EntityModel(sources.filter((s) => !s.path.startsWith('srd/')));
  });
  after(() => library?.dispose());

  it('counts no rules text as a use of the dragon Ice or the Werewolf: Ice Devil and Wall of Ice are weak mentions', () => {
    for (const name of ['Ice', 'Werewolf']) {
      const entity = model.resolveName(name)!;
      assert.equal(model.usage(entity.key).mentions, torysAlone.usage(entity.key).mentions, `${name} is mentioned as often as in Torys alone`);
    }
    const ice = model.resolveName('Ice')!;
    const weak = model.mentionsOf(ice.key).filter((m) => m.weak);
    assert.ok(weak.length > 0 && weak.every((m) => m.path.startsWith('srd/')), 'the SRD\'s uses of the word are there, marked weak');
    const lines = weak.map((m) => model.source(m.path)!.text.split('\n')[m.line]!);
    assert.ok(lines.some((l) => l.includes('Ice Devil')) && lines.some((l) => l.includes('Wall of Ice')));
    const iceDevil = mentioningSources(model).find((f) => f.links.some((l) => l.to === ice.key) && /ice devil/i.test(f.title));
    assert.deepEqual(iceDevil?.links.filter((l) => l.to === ice.key).map((l) => [l.count, l.weak > 0]), [[0, true]], 'the graph joins the Ice Devil page to Ice by weak mentions only');
    assert.ok(!renameEdits(model, ice.key, 'Ice', 'Rime').some((e) => e.path.startsWith('srd/')), 'renaming the dragon leaves the rules text alone');
  });

  it('counts the everyday word in a reference note when it is a link, a proper noun mid-sentence, or beside another name of the entity', () => {
    const ice = model.resolveName('Ice')!;
    const inNote = (text: string, sources = model.sources) => {
      const withNote = new EntityModel([...sources, { path: 'notes/dragons.md', title: 'Dragon lore', class: 'reference', entities: [], tags: [], text }]);
      return withNote.mentionsIn('notes/dragons.md', text).filter((m) => m.entityKey === ice.key);
    };
    const note = (text: string) => inNote(text).map((m) => [m.text, m.weak]);
    assert.deepEqual(note('Kobolds fear [[Ice]].'), [['Ice', false]], 'a link');
    assert.deepEqual(note('A shadow dragon known as Ice stalks them.'), [['Ice', false]], 'a proper noun mid-sentence');
    assert.deepEqual(note('Ice storms batter the coast.\nA Wall of Ice rises; the Ice Devil waits.\n| Ice | cold |'), [['Ice', true], ['Ice', true], ['Ice', true], ['Ice', true]], 'a sentence\'s first word, a title-case name, the start of a longer name, a table cell');
    const withAlias = model.sources.map((s) => (s.title === 'Ice' ? { ...s, entities: ['Ice the Unseen'] } : s));
    const found = inNote('Ice the Unseen hunts here.\n\nIce waits in the jungle.\n\n\n\n\nIce melts in spring.', withAlias);
    assert.deepEqual(found.map((m) => [m.line, m.weak]), [[0, false], [2, false], [7, true]], 'the bare word near its other name counts; further off it does not');
  });
});

describe('transcript export', () => {
  it('writes one branch, root first, keeping cut-off and failed replies visible', () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'transcript-'));
    const play = new PlayStore(path.join(dir, 'play.db'));
    try {
      const adventure = play.createAdventure({ campaignId: 'w', title: 'The Abbey at Night', persona: { name: 'Kell' } });
      const turn = (parentId: string | null, kind: 'do' | 'say', text: string, narration: string, status: 'complete' | 'incomplete' | 'error' = 'complete') => {
        const t = play.createTurn({ adventureId: adventure.id, parentId, action: { kind, text }, model: null, stateAfter: {} });
        return play.finishTurn(t.id, { status, narration, error: status === 'error' ? 'the model server did not answer' : null, stateDelta: null, stateAfter: {}, refusals: [], promptEvalCount: null, evalCount: null });
      };
      const first = turn(null, 'do', 'I knock on the gate', 'Sister Mara opens it.');
      const second = turn(first.id, 'say', 'Is Aldric here?', 'She hesitates', 'incomplete');
      turn(first.id, 'do', 'I walk away', 'The other branch.');
      const third = turn(second.id, 'do', 'I wait', '', 'error');
      const markdown = transcriptMarkdown(play.adventure(adventure.id), play.lineage(third.id), 'Westhaven');
      assert.equal(
        markdown,
        [
          '# The Abbey at Night\n\n_Westhaven · 3 turns · played as Kell_',
          '> **Kell:** I knock on the gate\n\nSister Mara opens it.',
          '> **Kell says:** “Is Aldric here?”\n\nShe hesitates\n\n_(The reply was cut off here.)_',
          '> **Kell:** I wait\n\n_(No reply: the model server did not answer.)_',
        ].join('\n\n---\n\n') + '\n',
      );
    } finally {
      play.close();
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });
});
