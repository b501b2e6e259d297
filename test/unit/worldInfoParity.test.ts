import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { loadCampaign, type Campaign } from '../../src/knowledge/campaign/campaign';
import { importCampaign } from '../../src/knowledge/indexing/importer';
import { KnowledgeStore } from '../../src/knowledge/indexing/store';
import { importLorebookFile } from '../../src/knowledge/interchange/lorebookImport';
import { retrieveKnowledge } from '../../src/knowledge/retrieval/retrieval';
import { NO_TIMED_EFFECTS, type ChatNames } from '../../src/knowledge/retrieval/worldInfo';
import type { KnowledgeBudgets, RetrievalResult, TokenMeasure, WorldInfoQuery } from '../../src/knowledge/retrieval/retrievalTypes';
import { chatNames, worldInfoMessages } from '../../src/story/contextBuilder';
import type { PlayerAction, Turn } from '../../src/story/types';
import { corpusPath } from '../support/corpora';
import { splitFrontMatter } from '../../src/knowledge/campaign';

/**
 * A differential table against SillyTavern 1.12.6's World Info (public/scripts/world-info.js at ba6f7b7, the
 * version the Eldoria corpus file comes from), over real books: SillyTavern's own Eldoria, imported as a
 * writer imports it, and a Chinese book written as SillyTavern saves one. Every expectation says how it was
 * derived by reading SillyTavern's algorithm; none is read back from our own output.
 */

/** A SillyTavern World Info file: entries keyed by uid, all of one order, titles sorting unlike their uids. */
const CHINESE_BOOK = {
  entries: Object.fromEntries(
    [
      { key: ['宗门'], comment: '青云宗', content: '青云宗是北境最大的宗门。' },
      { key: ['长老'], comment: '大长老', content: '大长老掌管宗门的戒律。' },
      { key: ['灵石'], comment: '灵石', content: '灵石是修士的货币。' },
      { key: ['{{user}}'], comment: '主角', content: '{{user}}是青云宗的外门弟子。' },
      { key: ['/^Kaelen/'], comment: '开头', content: '一条只在消息开头才匹配的条目。' },
      { key: ['/渡口[\\s\\S]*客栈/'], comment: '跨消息', content: '渡口与客栈之间有一条小路。' },
    ].map((e, uid) => [String(uid), { uid, order: 100, position: 0, constant: false, selective: true, keysecondary: [], disable: false, ...e }]),
  ),
};

interface Setup {
  dir: string;
  campaign: Campaign;
  index: KnowledgeStore;
}

async function setUp(): Promise<Setup> {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'st-wi-parity-'));
  fs.writeFileSync(path.join(dir, 'campaign.yaml'), 'id: parity\ntitle: Parity\ndefault_class: canon\n');
  importLorebookFile(corpusPath('lorebooks', 'Eldoria.worldinfo.st-2024-09.json'), { campaignRoot: dir, class: 'canon', folder: 'eldoria' });
  const book = path.join(dir, 'qingyun.json');
  fs.writeFileSync(book, JSON.stringify(CHINESE_BOOK));
  importLorebookFile(book, { campaignRoot: dir, class: 'canon', folder: 'qingyun' });
  fs.rmSync(book);
  const campaign = loadCampaign(dir);
  const index = KnowledgeStore.open(campaign);
  await importCampaign(campaign, index);
  return { dir, campaign, index };
}

const ROOMY: KnowledgeBudgets = { alwaysInclude: 600, canon: 4000, reference: 900, inspiration: 300 };
/** Tokens as characters: a price whose arithmetic a test can do by hand. */
const BY_CHARACTERS: TokenMeasure = { passage: (p) => p.text.length, section: () => 0, text: (t) => t.length };

const turn = (action: string, narration: string): Turn => ({ action: { kind: 'do', text: action }, narration }) as Turn;
const act = (text: string): PlayerAction => ({ kind: 'do', text });

describe('World Info parity with SillyTavern 1.12.6: real books, transcripts in three languages', () => {
  let s: Setup;
  before(async () => (s = await setUp()));
  after(() => {
    s.index.close();
    fs.rmSync(s.dir, { recursive: true, force: true });
  });

  async function prompt(history: Turn[], action: string, over: { budget?: number; budgets?: KnowledgeBudgets; measure?: TokenMeasure; names?: ChatNames; includeNames?: boolean } = {}): Promise<RetrievalResult> {
    const names = over.names ?? chatNames('Kaelen');
    const settings = { ...s.campaign.worldInfo, includeNames: over.includeNames ?? true };
    const { searchAdmits, ...wiSettings } = settings;
    const messages = worldInfoMessages(history, act(action), names, wiSettings);
    const worldInfo: WorldInfoQuery = { messages, chatLength: messages.length, state: NO_TIMED_EFFECTS, seed: 0, settings: wiSettings, budget: over.budget ?? 100_000, searchAdmits, names };
    return retrieveKnowledge(s.index, { input: action, stage: 'narrator', budgets: over.budgets ?? ROOMY, ...(over.measure ? { measure: over.measure } : {}), worldInfo });
  }
  /** Paths of the World Info entries in the canon section, in prompt order, each once. */
  const inserted = (r: RetrievalResult) => [...new Set(r.sections.canon.filter((p) => p.placedBy === 'world-info').map((p) => p.sourcePath))];
  const insertedUids = (r: RetrievalResult, folder: string) => inserted(r).filter((p) => p.startsWith(folder)).map((p) => uids(s).get(p));
  const firedUids = (r: RetrievalResult) => r.record.worldInfo!.verdicts.filter((v) => v.fired && v.sourcePath.startsWith('eldoria/')).map((v) => uids(s).get(v.sourcePath)).sort();
  const reasonOfUid = (r: RetrievalResult, uid: number) => r.record.worldInfo!.verdicts.find((v) => uids(s).get(v.sourcePath) === uid && v.sourcePath.startsWith('eldoria/'))!.reason;
  const verdict = (r: RetrievalResult, title: string) => r.record.worldInfo!.verdicts.find((v) => v.title === title)!;

  describe('1. equal orders', () => {
    it('inserts Eldoria (every entry order 100, position 0) in reverse uid order: 3, 2, 1, 0', async () => {
      // SillyTavern: getSortedEntries sorts by order, highest first, a stable sort, so ties keep uid order
      // (0, 1, 2, 3); the activated set is built in that order; the prompt sorts it again by order and
      // unshifts each into its position's list, which reverses the ties: 3, 2, 1, 0. Here the files' paths
      // sort otherwise (the titles' slugs), so path order cannot pass this.
      const r = await prompt([], 'Tell me about Eldoria, the shadowfang beasts, this glade and your magic.');
      assert.deepEqual(insertedUids(r, 'eldoria/'), [3, 2, 1, 0]);
      const byPath = [...uids(s)].filter(([p]) => p.startsWith('eldoria/')).sort(([a], [b]) => (a < b ? -1 : 1)).map(([, uid]) => uid);
      assert.notDeepEqual(byPath, [0, 1, 2, 3], 'the files sort otherwise by path');
    });

    it('French and Chinese transcripts order the same way: later uid first', async () => {
      // Entries 1 (shadowfang) and 0 (eldoria) fire on the French line; reversed: 1, then 0.
      const fr = await prompt([turn('Je marche dans la forêt.', 'La lumière tombe entre les arbres.')], "Qu'est-ce qu'Eldoria, et ces shadowfangs ?");
      assert.deepEqual(insertedUids(fr, 'eldoria/'), [1, 0]);
      // 宗门 (uid 0), 长老 (uid 1), 灵石 (uid 2) fire (a plain key is a substring, CJK included), and 主角 (uid 3)
      // on the persona's name the action opens with: 3, 2, 1, 0.
      const zh = await prompt([turn('我走进山门。', '守门弟子向你行礼。')], '宗门的长老拿出三块灵石。');
      assert.deepEqual(insertedUids(zh, 'qingyun/'), [3, 2, 1, 0]);
    });
  });

  describe('2. the budget, priced on the content as inserted', () => {
    it('admits in book order and stops when the running total reaches the budget (>=)', async () => {
      // SillyTavern adds each entry's content and a newline to the pass's text, in sorted order (uid 0 then
      // 1 for equal orders), and stops at the first whose total is >= the budget. A budget exactly the size of
      // both entries' lines admits entry 0 alone.
      const contents = eldoriaContents();
      const line = (uid: number) => `${contents[uid]!.replace(/\{\{user\}\}/g, 'Kaelen').replace(/\{\{char\}\}/g, 'the narrator')}\n`.length;
      const exact = await prompt([], 'Eldoria and its shadowfang beasts', { measure: BY_CHARACTERS, budget: line(0) + line(1) });
      assert.deepEqual(firedUids(exact), [0]);
      assert.match(reasonOfUid(exact, 1), /over the World Info budget \(\d+\/\d+ tokens/);
      const roomier = await prompt([], 'Eldoria and its shadowfang beasts', { measure: BY_CHARACTERS, budget: line(0) + line(1) + 1 });
      assert.deepEqual(firedUids(roomier), [0, 1]);
      assert.equal(roomier.record.worldInfo!.used, line(0) + line(1), 'the record counts the content as inserted, macros substituted');
    });
  });

  describe('3. what fires reaches the prompt', () => {
    it('sends every fired entry though the class budgets could hold none of them', async () => {
      // SillyTavern places World Info under its own budget; nothing else cuts an activated entry.
      const r = await prompt([], 'Tell me about Eldoria, the shadowfang beasts, this glade and your magic.', { budgets: { alwaysInclude: 0, canon: 5, reference: 0, inspiration: 0 } });
      assert.equal(firedUids(r).length, 4);
      assert.deepEqual(insertedUids(r, 'eldoria/'), [3, 2, 1, 0]);
      for (const p of r.sections.canon) assert.match(p.reason, /within the World Info budget/);
    });
  });

  describe('4. speaker names and macros', () => {
    it("scans 'Name: message' by default, so a {{user}} key fires on every action of a named persona", async () => {
      // SillyTavern: with world_info_include_names on (its default) each message is `${name}: ${mes}`, and
      // substituteParams turns the key {{user}} into the persona's name before looking for it.
      const r = await prompt([], '我四处看看。');
      assert.equal(verdict(r, '主角').fired, true);
      assert.match(verdict(r, '主角').reason, /key 'Kaelen' in message 1/);
      const off = await prompt([], '我四处看看。', { includeNames: false });
      assert.equal(verdict(off, '主角').fired, false);
    });

    it('substitutes macros in the content it prices and scans', async () => {
      const r = await prompt([], '宗门', { measure: BY_CHARACTERS, budget: 100_000 });
      assert.equal(verdict(r, '青云宗').fired, true);
      const named = await prompt([], 'Kaelen', { measure: BY_CHARACTERS });
      // '{{user}}是青云宗的外门弟子。' costs what 'Kaelen是青云宗的外门弟子。' and a newline cost.
      const cost = named.record.worldInfo!.used;
      assert.equal(cost, 'Kaelen是青云宗的外门弟子。\n'.length);
    });
  });

  describe('5. regular expressions over the scan buffer', () => {
    it("tests a pattern once over the joined messages: ^ is never a message's start, and a match may span messages", async () => {
      // SillyTavern's buffer is \x01 + the messages, newest first, joined by "\n\x01": /^Kaelen/ meets \x01
      // first and never matches, though every action starts "Kaelen: "; /渡口[\s\S]*客栈/ matches across the
      // newest message (渡口) and the one before it (客栈).
      const r = await prompt([turn('我走进镇子。', '店小二领你进了客栈。')], '明天去渡口。');
      assert.equal(verdict(r, '开头').fired, false);
      assert.equal(verdict(r, '跨消息').fired, true);
    });
  });
});

/** Each imported entry's uid in its book, by path, as the file's kept `sillytavern.entry` says. */
function uids(s: Setup): Map<string, number> {
  const out = new Map<string, number>();
  for (const folder of ['eldoria', 'qingyun']) {
    for (const name of fs.readdirSync(path.join(s.dir, folder))) {
      const meta = splitFrontMatter(fs.readFileSync(path.join(s.dir, folder, name), 'utf8')).meta as { sillytavern?: { entry?: { uid?: number } } };
      out.set(`${folder}/${name}`, meta.sillytavern!.entry!.uid!);
    }
  }
  return out;
}

/** The Eldoria book's contents, by uid, as SillyTavern holds them. */
function eldoriaContents(): string[] {
  const book = JSON.parse(fs.readFileSync(corpusPath('lorebooks', 'Eldoria.worldinfo.st-2024-09.json'), 'utf8')) as { entries: Record<string, { uid: number; content: string }> };
  return Object.values(book.entries).sort((a, b) => a.uid - b.uid).map((e) => e.content);
}
