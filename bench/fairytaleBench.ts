import Database from 'better-sqlite3';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { loadCampaign } from '../src/knowledge/campaign/campaign';
import { estimateTokens } from '../src/knowledge/campaign/tokens';
import { importCampaign } from '../src/knowledge/indexing/importer';
import { KnowledgeStore } from '../src/knowledge/indexing/store';
import { searchKnowledge } from '../src/knowledge/retrieval/retrieval';
import { corpusPath } from '../test/support/corpora';
import { isMeaningfulWord, tokenize } from '../src/knowledge/retrieval/retrievalTerms';

/**
 * Retrieval quality on FairytaleQA (real questions by education experts, each naming its answering
 * sections), as the held-out check measures it: each story one markdown file with `## Section N`
 * headings in a `default_class: canon` campaign; per story (a campaign each) and pooled (one campaign,
 * unscoped questions); a hit when a returned passage's lines overlap a gold section. Beside it, in the
 * same run, raw FTS5 bm25 (`porter unicode61`, one row per section, query words OR-ed, with and without a stop list). Constants are
 * tuned on `train` (a fixed sample of stories, to keep the bench quick); `val` is what is reported.
 */

export interface Story {
  name: string;
  sections: { section: number; text: string }[];
  questions: { question: string; gold: number[] }[];
}

/** RFC 4180 CSV: quoted fields may hold commas, doubled quotes and newlines. */
function parseCsv(text: string): string[][] {
  const rows: string[][] = [];
  let row: string[] = [];
  let field = '';
  let quoted = false;
  for (let i = 0; i < text.length; i++) {
    const c = text[i]!;
    if (quoted) {
      if (c === '"' && text[i + 1] === '"') {
        field += '"';
        i++;
      } else if (c === '"') quoted = false;
      else field += c;
    } else if (c === '"') quoted = true;
    else if (c === ',') {
      row.push(field);
      field = '';
    } else if (c === '\n' || c === '\r') {
      if (c === '\r' && text[i + 1] === '\n') i++;
      row.push(field);
      rows.push(row);
      row = [];
      field = '';
    } else field += c;
  }
  if (field !== '' || row.length > 0) {
    row.push(field);
    rows.push(row);
  }
  return rows.filter((r) => r.some((f) => f !== ''));
}

function records(file: string): Record<string, string>[] {
  const [header, ...rows] = parseCsv(fs.readFileSync(file, 'utf8'));
  return rows.map((r) => Object.fromEntries(header!.map((h, i) => [h, r[i] ?? ''])));
}

export type Split = 'train' | 'val';

/** The stories of a split in name order; `sample` takes every n-th one so a train run stays quick. */
export function loadStories(split: Split, sample?: number): Story[] {
  const root = corpusPath('fairytaleqa-dev');
  const names = fs
    .readdirSync(path.join(root, 'section-stories', split))
    .filter((f) => f.endsWith('-story.csv'))
    .map((f) => f.slice(0, -'-story.csv'.length))
    .sort();
  const picked = sample && sample < names.length ? names.filter((_, i) => i % Math.ceil(names.length / sample) === 0) : names;
  return picked.map((name) => ({
    name,
    // Some stories break lines with a bare CR, which markdown counts as a line: one convention for both.
    sections: records(path.join(root, 'section-stories', split, `${name}-story.csv`)).map((r) => ({ section: Number(r.section), text: r.text!.replace(/\r\n?/g, '\n').trim() })),
    questions: records(path.join(root, 'questions', split, `${name}-questions.csv`)).map((r) => ({
      question: r.question!,
      gold: r.cor_section!.split(',').map((s) => Number(s.trim())),
    })),
  }));
}

/** Rules questions a D&D player asks (from the SRD's own topics) and everyday questions: none is in a fairy tale. */
export const OFF_TOPIC = {
  train: [
    'How does grappling work?',
    'What are the effects of exhaustion levels?',
    'How much damage does falling deal?',
    'When do I make an opportunity attack?',
    'death saving throws at zero hit points',
    "the rogue's sneak attack damage",
    'druid wild shape into a beast',
    'half cover and three-quarters cover bonus to armor class',
    'maintaining concentration on a spell when damaged',
    'barbarian rage damage bonus',
    'prerequisites for multiclassing',
    'fireball spell damage and radius',
    'How many spell slots does a 5th level wizard have?',
    'What is the proficiency bonus at level 9?',
    'Does a critical hit double the damage dice?',
    'How do I calculate passive perception?',
    'How do I configure a Kubernetes ingress controller?',
    'What hydration should a sourdough starter have?',
    'quarterly earnings report for the stock market',
    'python list comprehension syntax',
    'home office tax deduction rules',
    'replacing a smartphone screen',
    'train timetable for the airport express',
    'How do I reset my router password?',
    'best settings for a dishwasher eco cycle',
    'What is the interest rate on a fixed mortgage?',
    'How do I renew my passport online?',
    'symptoms of a vitamin D deficiency',
  'How do I change a flat tyre on a bicycle?',
  'What is the boiling point of water at high altitude?',
  'how to descale an electric kettle',
  'Which houseplants are safe for cats?',
  'How often should I water a cactus?',
  'What are the opening hours of the public library?',
  'How do I cancel my gym membership?',
  'best way to remove red wine stains from carpet',
  'How long should I boil an egg for a runny yolk?',
  'what is the speed limit on a motorway',
  'how to write a cover letter for a job application',
  'How do I export a spreadsheet to PDF?',
  'Why is my wifi so slow in the evening?',
  'How many hours of sleep does a teenager need?',
  'What vaccines does a puppy need?',
  'how to fold a fitted sheet',
  'What is the difference between baking soda and baking powder?',
  'how much paint do I need for a small bedroom',
  'When is the next full moon?',
  'How do I merge two branches in git?',
  'what does a blood pressure reading of 140 over 90 mean',
  'How do I book a table at a restaurant for Friday night?',
  'tips for a job interview over video call',
  'How do solar panels work on a cloudy day?',
  'What is the population of Canada?',
  'how to clean a cast iron pan',
  'What size battery does a smoke alarm take?',
  'how do I transfer photos from my phone to my laptop',
  'What is the minimum wage this year?',
  'How many tablespoons are in a cup?',
  'How do I set an out of office reply?',
  'what is a good resting heart rate for adults',
  'How to get rid of fruit flies in the kitchen',
  'Is it cheaper to rent or buy a house?',
  'How do I pair bluetooth headphones?',
  'what should I pack for a beach holiday',
  'How long does a parcel take to ship overseas?',
  'how to stop a dripping tap',
  'Why does my car make a squealing noise when braking?',
  'What is the exchange rate for euros to dollars?',
  'How does the ranger favored enemy feature work?',
  'What is the damage of a greataxe?',
  'Can a wizard cast two spells in one turn?',
  'How does the grappled condition end?',
  'What does the sorcerer metamagic quickened spell cost?',
  'how many attacks does a fighter get at level 11',
  'What is the carrying capacity for a strength score of 15?',
  'How does two weapon fighting work?',
  'Does the shield spell stop magic missile?',
  'what saving throw does a warlock use for eldritch blast',
  'How do inspiration points work?',
  'What are the rules for underwater combat?',
  'How does the bardic inspiration die scale with level?',
  'How far can a character jump with a running start?',
  'what is the spell attack modifier formula',
  'How do you stabilize a dying creature with a medicine check?',
  'What languages can a half-elf speak?',
  'How does the ready action work with spells?',
  'what is the hit die of a paladin',
  'How long does it take to attune to a magic item?',
  'How do I invoke an aspect for a bonus?',
  'What is a stress track and how many boxes does it have?',
  'how do fate points refresh between sessions',
  'The mechanic swaps the warp drive fuel cells in the hangar.',
  'I log in to the terminal and check the server logs.',
  'We order pizza and watch the football match.',
  'I call customer support about my broken washing machine.',
  'The detective checks the CCTV footage from the parking garage.',
  'I check my email and reply to my manager.',
  'The astronaut radios mission control about the oxygen levels.',
  ],
  val: [
    'How does the paladin divine smite work?',
    'What does the frightened condition impose on ability checks?',
    'How long is a long rest and what does it restore?',
    'Can a creature take the dodge action as a bonus action?',
    'What is the armor class of chain mail?',
    'How does advantage and disadvantage stack?',
    'What is the range of a longbow?',
    'How many hit dice does a fighter get at level 1?',
    'cleric spellcasting ability and spell save DC',
    'What does the counterspell spell do?',
    'How does the monk unarmored defense work?',
    'What happens when a creature is reduced to 0 hit points by massive damage?',
    'initiative order and surprise in combat',
    'How heavy is a backpack and what does it carry?',
    'How much does a healing potion cost in gold pieces?',
    'What is the difference between a Roth IRA and a 401k?',
    'How do I bleed a radiator?',
    'how to set up two-factor authentication on email',
    'What time does the pharmacy close on Sunday?',
    'recipe for gluten free banana bread',
    'How do I update the firmware on my printer?',
    'which laptop has the best battery life',
    'how to file a car insurance claim after an accident',
    'what is the capital gains tax on shares',
    'How do I unclog a kitchen sink drain?',
    'weather forecast for the weekend',
    'how to install node on ubuntu',
    'How many calories are in a cup of rice?',
    'What is the best way to learn Spanish vocabulary?',
    'The pilot checks the hyperdrive coolant before docking.',
  ],
} as const;

/**
 * Everyday questions worded with the tales' own vocabulary (dogs, bread, weddings, gardens, horses), written
 * in one go after the sets above and split alternately into a tuning and a reporting half: the hardest
 * off-topic questions for word statistics, since each of their words is a fairy tale's word too.
 */
export const EVERYDAY_IN_TALE_WORDS = {
  train: [
    "Why does my dog bark at night?",
    "What should I wear to a summer wedding?",
    "Which flowers bloom in early spring?",
    "How do I make my bread rise higher?",
    "How do I keep deer out of my vegetable garden?",
    "How do I train my cat to use a scratching post?",
    "How do I clean mould off the bathroom ceiling?",
    "What is the cheapest way to heat a house in winter?",
    "How do I stop my baby waking up at night?",
    "What time does the sun set in December?",
    "How can I sleep better when I am stressed?",
    "How do I ask my boss for a raise?",
    "How do I grow tomatoes on a balcony?",
    "How do I cook a turkey for Christmas dinner?",
    "How do I get rid of moss on my lawn?",
    "My neighbour plays loud music every night, what can I do?",
    "How do I teach my daughter to ride a bike?",
    "How do I sharpen a kitchen knife?",
    "What should I do if my basement floods?",
    "How do I knit a scarf for beginners?",
    "What is the best time to plant apple trees?",
    "Is bread bad for ducks?",
    "How do I choose a wedding ring?",
    "How do I make a budget for the month?",
    "How do I start running when I am overweight?",
    "How do I make friends in a new city?",
    "How often should I change my car oil?",
    "How do I get my toddler to eat vegetables?",
    "How can I save money on groceries?",
    "What is the best way to travel from London to Paris?",
    "My phone battery dies too fast, what should I do?",
    "How do I make candles at home?",
    "How do I clean a wool coat?",
    "How long should a nap be?",
    "We are planning a picnic in the park on Saturday.",
    "My sister is getting married next month and I have to give a speech.",
    "I want to paint the fence in the garden.",
    "Our cat keeps bringing dead mice into the house.",
    "How do I bake sourdough bread without a dutch oven?",
    "How do I light a wood stove safely?",
    "What is the best fishing bait for trout in a river?",
    "Why does my bread come out dense and heavy?",
    "What wine goes well with roast chicken?",
    "How tall do sunflowers grow?",
    "What do I do when my car won't start in the cold?",
    "Where is the nearest petrol station open late?",
    "How much should I tip a waiter?",
    "How do I plan a surprise party for my husband?",
    "What is the fastest way to cool down a hot room?",
    "How do I stop my glasses fogging up?",
  ],
  val: [
    "How do I get a red wine stain out of a white shirt?",
    "How often should I feed my goldfish?",
    "How much coffee is too much in a day?",
    "What is the best age to start riding lessons for a child?",
    "Can I freeze cooked rice?",
    "What is a good gift for my grandmother's birthday?",
    "How long does it take to walk ten kilometres?",
    "Should I buy a used car or lease a new one?",
    "How do I get my son to do his homework?",
    "How do I fix a squeaky door hinge?",
    "Is it safe to swim in the sea after eating?",
    "What is the best way to store fresh herbs?",
    "What is the quickest route to the city centre by bus?",
    "How many eggs do I need for a sponge cake?",
    "What is the difference between a cold and the flu?",
    "How do I write a thank you letter to a teacher?",
    "Where can I recycle old batteries?",
    "How do I remove rust from garden tools?",
    "How much water should I drink every day?",
    "How do I find a good plumber?",
    "How do I stop my horse from biting?",
    "How long can milk stay out of the fridge?",
    "What are the rules of chess castling?",
    "Can I bring a knife in my hand luggage?",
    "Why are the leaves on my rose bush turning yellow?",
    "How do I polish silver jewellery?",
    "What do I need to open a bank account?",
    "How do I bake a chocolate birthday cake?",
    "How do I help a friend who is grieving?",
    "How do I stop snoring?",
    "How do I write a good wedding speech?",
    "What breed of dog is good with children?",
    "How do I keep foxes away from my chickens?",
    "I spilled coffee on my laptop keyboard.",
    "I need a new pair of winter boots.",
    "The kitchen tap is leaking again.",
    "I am looking for a cheap hotel near the beach.",
    "I lost my wallet on the train this morning.",
    "What should I feed a stray kitten?",
    "How do I get wax out of a tablecloth?",
    "How do I remove a splinter from a finger?",
    "How do I look after a sick rabbit?",
    "How do I sew a button back on a coat?",
    "How do I stop pigeons nesting on my roof?",
    "How do I carve a pumpkin for Halloween?",
    "How do I brew tea properly?",
    "How do I clean my oven without chemicals?",
    "How do I teach my parrot to talk?",
    "How do I become a firefighter?",
    "How do I make pancakes without milk?",
  ],
} as const;

/** A section heading of a rulebook: its text, its file (relative to the corpus), and the section's first line after it. */
export interface RulebookHeading {
  heading: string;
  file: string;
  firstLine: number;
}

/**
 * The D&D SRD's or the Fate SRD's section headings of two or more meaningful words ("Attack Rolls and
 * Damage"), in file order. The SRD's monsters, spells and treasure are left out: a fairy tale may rightly
 * answer about a green dragon.
 */
export function rulebookHeadings(corpus: 'dnd-srd-5.1' | 'fate-srd'): RulebookHeading[] {
  const root = corpusPath(corpus);
  const found: RulebookHeading[] = [];
  const walk = (dir: string): void => {
    for (const entry of fs.readdirSync(dir, { withFileTypes: true }).sort((a, b) => a.name.localeCompare(b.name))) {
      const file = path.join(dir, entry.name);
      if (entry.isDirectory()) walk(file);
      else if (entry.name.endsWith('.md')) {
        const lines = fs.readFileSync(file, 'utf8').split('\n');
        lines.forEach((line, i) => {
          const heading = /^#{2,6}\s+(.*)$/.exec(line)?.[1]
            ?.replace(/<[^>]*>/g, ' ')
            .replace(/[*_`\u200b]/g, '')
            .replace(/\s+/g, ' ')
            .trim();
          if (!heading || !/^[\p{L}][\p{L}\s,'’-]*$/u.test(heading)) return;
          const words = tokenize(heading);
          if (words.length > 8 || words.filter(isMeaningfulWord).length < 2) return;
          let next = i + 1;
          while (next < lines.length && lines[next]!.trim() === '') next++;
          const firstLine = next + 1;
          found.push({ heading, file: path.relative(root, file), firstLine });
        });
      }
    }
  };
  if (corpus === 'fate-srd') walk(root);
  else for (const folder of ['Characterizations', 'Classes', 'Equipment', 'Gamemastering', 'Gameplay', 'Races']) walk(path.join(root, folder));
  return found;
}

/**
 * Rules questions drawn from a rulebook's headings ("How does Attack Rolls and Damage work?"), each heading
 * once, alternately into a tuning half (asked with `train`) and a reporting half (asked with `val`):
 * hundreds of off-topic questions for the fairy tales that nobody wrote to pass.
 */
export function rulesQuestions(corpus: 'dnd-srd-5.1' | 'fate-srd', split: Split): string[] {
  const headings = new Map(rulebookHeadings(corpus).map((h) => [h.heading.toLowerCase(), h.heading]));
  const sorted = [...headings.values()].sort((a, b) => a.localeCompare(b));
  return sorted.filter((_, i) => i % 2 === (split === 'train' ? 0 : 1)).map(headingQuestion);
}

export const headingQuestion = (heading: string): string => `How does ${heading} work?`;

/** Every off-topic set asked of the fairy tales, by kind. */
function offTopicSets(split: Split): { kind: string; questions: readonly string[] }[] {
  return [
    { kind: 'hand-written SRD rules + everyday', questions: OFF_TOPIC[split] },
    { kind: "everyday in the tales' words", questions: EVERYDAY_IN_TALE_WORDS[split] },
    { kind: 'D&D SRD headings', questions: rulesQuestions('dnd-srd-5.1', split) },
    { kind: 'Fate SRD headings', questions: rulesQuestions('fate-srd', split) },
  ];
}

const K = [1, 3, 5] as const;
const LIMIT = 5;

interface Written {
  /** Campaign-relative path of the story file. */
  path: string;
  /** Section number → [first line, last line] of its text in the file. */
  lines: Map<number, [number, number]>;
}

/** A story as a markdown file: `## Section N` before each section, as the held-out check writes it. */
function writeStory(dir: string, story: Story): Written {
  const out: string[] = [];
  const lines = new Map<number, [number, number]>();
  for (const s of story.sections) {
    out.push(`## Section ${s.section}`, '');
    const first = out.length + 1;
    out.push(...s.text.split(/\r?\n/));
    lines.set(s.section, [first, out.length]);
    out.push('');
  }
  const rel = `${story.name}.md`;
  fs.writeFileSync(path.join(dir, rel), out.join('\n'));
  return { path: rel, lines };
}

export interface Tally {
  questions: number;
  hits: Record<number, number>;
  passages: number;
  tokens: number;
  abstained: number;
  /** Questions whose first result comes from another story than the one asked about. */
  otherStoryFirst: number;
}

export const newTally = (): Tally => ({ questions: 0, hits: { 1: 0, 3: 0, 5: 0 }, passages: 0, tokens: 0, abstained: 0, otherStoryFirst: 0 });

/** Counts one question: `ranked` is what was returned, `gold` the lines of its answer. */
export function count(t: Tally, ranked: Located[], gold: { path: string; ranges: [number, number][] }): void {
  t.questions++;
  t.passages += ranked.length;
  t.tokens += ranked.reduce((n, r) => n + r.tokens, 0);
  if (ranked.length === 0) t.abstained++;
  else if (ranked[0]!.path !== gold.path) t.otherStoryFirst++;
  const first = ranked.findIndex((r) => r.path === gold.path && gold.ranges.some(([a, b]) => r.start <= b && r.end >= a));
  for (const k of K) if (first !== -1 && first < k) t.hits[k]!++;
}

function merge(into: Tally, from: Tally): void {
  into.questions += from.questions;
  for (const k of K) into.hits[k]! += from.hits[k]!;
  into.passages += from.passages;
  into.tokens += from.tokens;
  into.abstained += from.abstained;
  into.otherStoryFirst += from.otherStoryFirst;
}

export interface QualityRow {
  recall: Record<number, number>;
  passagesPerQuestion: number;
  tokensPerQuestion: number;
  falseAbstention: number;
  otherStoryFirst: number;
}

export function summarize(t: Tally): QualityRow {
  const r = (n: number) => Math.round((n / Math.max(1, t.questions)) * 1000) / 1000;
  return {
    recall: Object.fromEntries(K.map((k) => [k, r(t.hits[k]!)])),
    passagesPerQuestion: Math.round((t.passages / Math.max(1, t.questions)) * 10) / 10,
    tokensPerQuestion: Math.round(t.tokens / Math.max(1, t.questions)),
    falseAbstention: r(t.abstained),
    otherStoryFirst: r(t.otherStoryFirst),
  };
}

/** Where a returned text lies in the campaign, and what it costs. */
export interface Located {
  path: string;
  start: number;
  end: number;
  tokens: number;
}

/**
 * English function words a plain search drops from the query (the usual stop list of IR systems: articles,
 * pronouns, auxiliaries, prepositions, question words). Written for this bench; the product has its own.
 */
const STOP_WORDS = new Set(
  (
    'a about above after again against all am an and any are as at be because been before being below between both but by can could ' +
    'did do does doing down during each few for from further had has have having he her here hers herself him himself his how i if in ' +
    'into is it its itself just me more most my myself no nor not now of off on once only or other our ours ourselves out over own same ' +
    'she should so some such than that the their theirs them themselves then there these they this those through to too under until up ' +
    'very was we were what when where which while who whom why will with would you your yours yourself yourselves'
  ).split(' '),
);

/**
 * One row per section in a bare FTS5 table, `porter unicode61`, ranked by bm25: the anchor. Two queries:
 * every word of the question OR-ed (the old anchor), and the same without stop words (the strongest plain
 * bm25, which the product is compared against).
 */
export class RawBm25 {
  private readonly db = new Database(':memory:');
  private readonly rows: Located[] = [];
  private readonly insert;
  constructor() {
    this.db.exec("CREATE VIRTUAL TABLE s USING fts5 (body, tokenize = 'porter unicode61')");
    this.insert = this.db.prepare('INSERT INTO s (rowid, body) VALUES (?, ?)');
  }
  add(story: Story, written: Written): void {
    for (const s of story.sections) {
      const [start, end] = written.lines.get(s.section)!;
      this.addRow({ path: written.path, start, end, tokens: estimateTokens(s.text) }, s.text);
    }
  }
  addRow(row: Located, text: string): void {
    this.rows.push(row);
    this.insert.run(this.rows.length, text);
  }
  search(question: string, options: { stopList: boolean } = { stopList: true }): Located[] {
    const all = [...new Set(question.toLowerCase().match(/[\p{L}\p{N}]+/gu) ?? [])];
    const content = options.stopList ? all.filter((w) => !STOP_WORDS.has(w)) : all;
    // A question of stop words only is asked with all its words, as a plain search would rather than answer nothing.
    const words = content.length > 0 ? content : all;
    if (words.length === 0) return [];
    const ids = this.db
      .prepare('SELECT rowid FROM s WHERE s MATCH ? ORDER BY bm25(s) LIMIT ?')
      .all(words.map((w) => `"${w}"`).join(' OR '), LIMIT) as { rowid: number }[];
    return ids.map((r) => this.rows[r.rowid - 1]!);
  }
  close(): void {
    this.db.close();
  }
}

/** What `storyteller search --limit 5` returns for a question, located. */
export async function productSearch(store: KnowledgeStore, question: string): Promise<Located[]> {
  const { hits } = await searchKnowledge(store, question, { limit: LIMIT });
  return hits.map((h) => ({ path: h.sourcePath, start: h.startLine, end: h.endLine, tokens: h.tokenCount }));
}

async function indexedCampaign(stories: Story[]): Promise<{ store: KnowledgeStore; written: Map<string, Written>; bm25: RawBm25; dispose: () => void }> {
  const root = fs.mkdtempSync(path.join(os.tmpdir(), 'st-fairytale-'));
  fs.writeFileSync(path.join(root, 'campaign.yaml'), 'id: fairytales\ntitle: Fairy tales\ndefault_class: canon\n');
  const written = new Map<string, Written>();
  const bm25 = new RawBm25();
  for (const story of stories) {
    const w = writeStory(root, story);
    written.set(story.name, w);
    bm25.add(story, w);
  }
  const campaign = loadCampaign(root);
  const store = KnowledgeStore.inMemory(campaign.id);
  await importCampaign(campaign, store);
  return {
    store,
    written,
    bm25,
    dispose: () => {
      store.close();
      bm25.close();
      fs.rmSync(root, { recursive: true, force: true });
    },
  };
}

export interface FairytaleResult {
  split: Split;
  stories: number;
  questions: number;
  /** `bm25`: the anchor, with a stop list; `bm25EveryWord`: the old anchor, every word of the question OR-ed. */
  perStory: { product: QualityRow; bm25: QualityRow; bm25EveryWord: QualityRow; byStory: { name: string; product: QualityRow; bm25: QualityRow }[] };
  pooled: { product: QualityRow; bm25: QualityRow; bm25EveryWord: QualityRow };
  /** Share of off-topic questions that got nothing, by kind of question (raw bm25 never abstains). */
  offTopicAbstention: { kind: string; questions: number; perStory: number; pooled: number }[];
}

export async function measureFairytales(split: Split, sample?: number, log: (line: string) => void = () => undefined): Promise<FairytaleResult> {
  const stories = loadStories(split, sample);
  const offTopic = offTopicSets(split).map((set) => ({ ...set, perStory: { asked: 0, abstained: 0 }, pooled: { asked: 0, abstained: 0 } }));
  const abstains = async (store: KnowledgeStore, question: string) => (await productSearch(store, question)).length === 0;
  const perStoryProduct = newTally();
  const perStoryBm25 = newTally();
  const perStoryEveryWord = newTally();
  const byStory: FairytaleResult['perStory']['byStory'] = [];
  for (const story of stories) {
    const c = await indexedCampaign([story]);
    const w = c.written.get(story.name)!;
    const product = newTally();
    const bm25 = newTally();
    for (const q of story.questions) {
      const gold = { path: w.path, ranges: q.gold.flatMap((g) => (w.lines.has(g) ? [w.lines.get(g)!] : [])) };
      count(product, await productSearch(c.store, q.question), gold);
      count(bm25, c.bm25.search(q.question), gold);
      count(perStoryEveryWord, c.bm25.search(q.question, { stopList: false }), gold);
    }
    for (const set of offTopic) {
      for (const q of set.questions) {
        set.perStory.asked++;
        if (await abstains(c.store, q)) set.perStory.abstained++;
      }
    }
    c.dispose();
    merge(perStoryProduct, product);
    merge(perStoryBm25, bm25);
    byStory.push({ name: story.name, product: summarize(product), bm25: summarize(bm25) });
  }

  const pooled = await indexedCampaign(stories);
  const pooledProduct = newTally();
  const pooledBm25 = newTally();
  const pooledEveryWord = newTally();
  for (const story of stories) {
    const w = pooled.written.get(story.name)!;
    for (const q of story.questions) {
      const gold = { path: w.path, ranges: q.gold.flatMap((g) => (w.lines.has(g) ? [w.lines.get(g)!] : [])) };
      count(pooledProduct, await productSearch(pooled.store, q.question), gold);
      count(pooledBm25, pooled.bm25.search(q.question), gold);
      count(pooledEveryWord, pooled.bm25.search(q.question, { stopList: false }), gold);
    }
  }
  for (const set of offTopic) {
    for (const q of set.questions) {
      set.pooled.asked++;
      if (await abstains(pooled.store, q)) set.pooled.abstained++;
    }
  }
  pooled.dispose();
  const share = (t: { asked: number; abstained: number }) => Math.round((t.abstained / Math.max(1, t.asked)) * 1000) / 1000;

  const result: FairytaleResult = {
    split,
    stories: stories.length,
    questions: perStoryProduct.questions,
    perStory: { product: summarize(perStoryProduct), bm25: summarize(perStoryBm25), bm25EveryWord: summarize(perStoryEveryWord), byStory },
    pooled: { product: summarize(pooledProduct), bm25: summarize(pooledBm25), bm25EveryWord: summarize(pooledEveryWord) },
    offTopicAbstention: offTopic.map((set) => ({ kind: set.kind, questions: set.questions.length, perStory: share(set.perStory), pooled: share(set.pooled) })),
  };
  printTable(result, log);
  return result;
}

function printTable(r: FairytaleResult, log: (line: string) => void): void {
  const row = (label: string, q: QualityRow) =>
    `  ${label.padEnd(34)} ${K.map((k) => q.recall[k]!.toFixed(3)).join('  ')}   ${String(q.passagesPerQuestion).padStart(4)}  ${String(q.tokensPerQuestion).padStart(6)}   ${`${(q.falseAbstention * 100).toFixed(1)}%`.padStart(11)}   ${`${(q.otherStoryFirst * 100).toFixed(1)}%`.padStart(15)}`;
  log(`fairytaleqa ${r.split}: ${r.stories} stories, ${r.questions} questions (hit = a returned passage overlaps a gold section)`);
  log(`  ${''.padEnd(34)} R@1    R@3    R@5    pass  tokens   got nothing   other story 1st`);
  log(row('bm25 every word, one story each', r.perStory.bm25EveryWord));
  log(row('bm25 stop list, one story each', r.perStory.bm25));
  log(row('product, one story per campaign', r.perStory.product));
  log(row(`bm25 every word, ${r.stories} pooled`, r.pooled.bm25EveryWord));
  log(row(`bm25 stop list, ${r.stories} pooled`, r.pooled.bm25));
  log(row(`product, ${r.stories} stories pooled`, r.pooled.product));
  const margin = (product: QualityRow, anchor: QualityRow) => K.map((k) => `R@${k} ${(product.recall[k]! - anchor.recall[k]! >= 0 ? '+' : '')}${(product.recall[k]! - anchor.recall[k]!).toFixed(3)}`).join(', ');
  log(`  product against bm25 with a stop list (the anchor): per story ${margin(r.perStory.product, r.perStory.bm25)}; pooled ${margin(r.pooled.product, r.pooled.bm25)}`);
  log(`  product against bm25 on every word (the old anchor): per story ${margin(r.perStory.product, r.perStory.bm25EveryWord)}; pooled ${margin(r.pooled.product, r.pooled.bm25EveryWord)}`);
  const worse = r.perStory.byStory.filter((s) => s.product.recall[5]! < s.bm25.recall[5]! || s.product.recall[1]! < s.bm25.recall[1]!);
  log(`  per story: product below bm25 (stop list) on R@1 or R@5 in ${worse.length} of ${r.stories}${worse.length > 0 ? `: ${worse.map((s) => `${s.name} (R@1 ${s.product.recall[1]} vs ${s.bm25.recall[1]}, R@5 ${s.product.recall[5]} vs ${s.bm25.recall[5]})`).join('; ')}` : ''}`);
  for (const set of r.offTopicAbstention) {
    log(`  off-topic abstention, ${set.questions} ${set.kind} questions: per story ${(set.perStory * 100).toFixed(1)}%, pooled ${(set.pooled * 100).toFixed(1)}% (raw bm25 0.0%)`);
  }
}

if (require.main === module) {
  const split = (process.argv[2] ?? 'val') as Split;
  const sample = process.argv[3] ? Number(process.argv[3]) : undefined;
  measureFairytales(split, sample, (line) => console.log(line)).catch((error: unknown) => {
    console.error(error);
    process.exitCode = 1;
  });
}
