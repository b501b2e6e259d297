import fs from 'node:fs';
import path from 'node:path';
import { estimateTokens } from '../../src/knowledge/tokens';
import type { CandidateDecision, KnowledgeSection, RetrievalQuery, RetrievalResult, SelectedPassage } from '../../src/knowledge/retrievalTypes';
import type { KnowledgeClass } from '../../src/knowledge/types';
import type { CastEntry, KnowledgePort } from '../../src/story/ports';

/**
 * An in-memory KnowledgePort over the real example campaign's files, returning RetrievalResult-shaped
 * data: passages admitted by shared terms, ordered into sections by class, cut at the section budgets,
 * with a decision recorded for every candidate. It stands in for the retrieval module until it lands.
 */

interface Passage {
  passageId: string;
  sourceId: string;
  sourcePath: string;
  sourceTitle: string;
  class: KnowledgeClass;
  headingPath: string[];
  text: string;
  hidden: boolean;
  alwaysInclude: boolean;
  entities: string[];
  tags: string[];
  startLine: number;
  endLine: number;
}

const CAMPAIGN = path.resolve(__dirname, '../../fixtures/example-campaign');
const FOLDER_CLASS: Record<string, KnowledgeClass> = { characters: 'canon', places: 'canon' };

function frontMatter(text: string): { meta: Record<string, string>; body: string; offset: number } {
  const match = /^---\n([\s\S]*?)\n---\n/.exec(text);
  if (!match) return { meta: {}, body: text, offset: 0 };
  const meta: Record<string, string> = {};
  for (const line of match[1]!.split('\n')) {
    const [k, ...v] = line.split(':');
    if (k && v.length) meta[k.trim()] = v.join(':').trim();
  }
  return { meta, body: text.slice(match[0].length), offset: match[0].split('\n').length - 1 };
}

const list = (v: string | undefined) => (v ? v.replace(/^\[|\]$/g, '').split(',').map((s) => s.trim()).filter(Boolean) : []);

export function loadExamplePassages(): Passage[] {
  const files = ['canon.md', 'rules.md', 'reference.md', 'inspiration.md', 'characters/mara.md', 'characters/brother-aldric.md', 'places/old-abbey.md'];
  const passages: Passage[] = [];
  for (const rel of files) {
    const { meta, body, offset } = frontMatter(fs.readFileSync(path.join(CAMPAIGN, rel), 'utf8'));
    const cls = (meta.class as KnowledgeClass | undefined) ?? FOLDER_CLASS[rel.split('/')[0]!] ?? 'reference';
    const lines = body.split('\n');
    let heading: string[] = [];
    let buffer: string[] = [];
    let start = offset + 1;
    const flush = (end: number) => {
      const text = buffer.join('\n').trim();
      if (text) {
        passages.push({
          passageId: `${rel}#${passages.length}`,
          sourceId: rel,
          sourcePath: rel,
          sourceTitle: meta.title ?? rel,
          class: cls,
          headingPath: heading,
          text,
          hidden: meta.visibility === 'hidden',
          alwaysInclude: meta.always_include === 'true',
          entities: list(meta.entities),
          tags: list(meta.tags),
          startLine: start,
          endLine: end,
        });
      }
      buffer = [];
    };
    lines.forEach((line, i) => {
      const h = /^(#+)\s+(.*)$/.exec(line);
      if (h) {
        flush(offset + i);
        heading = [...heading.slice(0, h[1]!.length - 1), h[2]!];
        start = offset + i + 1;
      } else buffer.push(line);
    });
    flush(offset + lines.length);
  }
  return passages;
}

const words = (text: string) => new Set(text.toLowerCase().split(/[^a-z0-9]+/).filter((w) => w.length > 3));

export class InMemoryKnowledge implements KnowledgePort {
  passages = loadExamplePassages();
  readonly queries: RetrievalQuery[] = [];

  /** What a reindex after deleting the file would leave. */
  deleteSource(sourcePath: string): void {
    this.passages = this.passages.filter((p) => p.sourcePath !== sourcePath);
  }

  retrieve(query: RetrievalQuery): Promise<RetrievalResult> {
    this.queries.push(query);
    const terms = words([query.input, ...(query.recent ?? []), ...(query.entities ?? [])].join(' '));
    const sections: Record<KnowledgeSection, SelectedPassage[]> = { alwaysInclude: [], canon: [], reference: [], inspiration: [] };
    const used: Record<KnowledgeSection, number> = { alwaysInclude: 0, canon: 0, reference: 0, inspiration: 0 };
    const candidates: CandidateDecision[] = [];
    for (const p of this.passages) {
      const matched = [...words(p.text + ' ' + p.headingPath.join(' '))].filter((w) => terms.has(w));
      const section: KnowledgeSection = p.alwaysInclude ? 'alwaysInclude' : p.class;
      const tokenCount = estimateTokens(p.text);
      const admitted = p.alwaysInclude || matched.length > 0;
      const fits = used[section] + tokenCount <= query.budgets[section];
      const outcome = !admitted ? 'not-relevant' : fits ? 'selected' : 'over-budget';
      const reason = !admitted
        ? 'no query term matched'
        : fits
          ? `matched ${matched.map((m) => `'${m}'`).join(', ') || 'always include'}`
          : `over the ${section} budget (${used[section] + tokenCount}/${query.budgets[section]} tokens)`;
      candidates.push({
        passageId: p.passageId,
        sourceId: p.sourceId,
        sourcePath: p.sourcePath,
        sourceTitle: p.sourceTitle,
        class: p.class,
        headingPath: p.headingPath,
        tokenCount,
        admitted,
        matchedTerms: matched,
        lexicalScore: admitted ? matched.length : null,
        similarity: null,
        semanticFloor: null,
        score: admitted ? matched.length : null,
        boosts: [],
        outcome,
        reason,
        section: admitted ? section : null,
        duplicateOf: null,
      });
      if (outcome === 'selected') {
        used[section] += tokenCount;
        sections[section].push({
          passageId: p.passageId,
          sourceId: p.sourceId,
          sourcePath: p.sourcePath,
          sourceTitle: p.sourceTitle,
          class: p.class,
          headingPath: p.headingPath,
          text: p.text,
          tokenCount,
          hidden: p.hidden,
          score: matched.length,
          reason,
          startLine: p.startLine,
          endLine: p.endLine,
        });
      }
    }
    return Promise.resolve({
      sections,
      record: {
        createdAt: new Date().toISOString(),
        campaignId: 'westhaven',
        stage: query.stage,
        queryText: query.input,
        terms: [...terms],
        semantic: { used: false, model: null, reason: 'lexical only in this test double' },
        budgets: query.budgets,
        candidates,
        conflicts: [],
      },
    });
  }

  cast(): Promise<CastEntry[]> {
    const bySource = new Map<string, Passage>();
    for (const p of this.passages) if (p.class === 'canon' && p.entities.length > 0 && !bySource.has(p.sourceId)) bySource.set(p.sourceId, p);
    return Promise.resolve(
      [...bySource.values()].map((p) => ({
        name: p.sourceTitle,
        aliases: p.entities,
        description: p.text.replace(/\s+/g, ' '),
        kind: p.tags.includes('npc') ? ('character' as const) : p.tags.includes('place') ? ('place' as const) : ('other' as const),
        hidden: p.hidden,
      })),
    );
  }
}

export const KAELEN = { name: 'Kaelen', pronouns: 'he/him', description: 'A half-elf ranger, exiled from the northern holds.' };

export const STAT_SCHEMA = {
  player: { hp: { initial: 100, min: 0, max: 100 }, mana: { initial: 30, min: 0, max: 50 } },
  world: { location: { initial: 'the north road' } },
  npcs: { mara: { name: 'Sister Mara', desc: 'Keeper of the infirmary.', stats: { trust: { initial: 40, min: 0, max: 100 } } } },
  flags: { alarm_raised: { desc: 'the watch is looking for Kaelen' } },
  milestones: { crypt_opened: { desc: 'the bronze crypt door has been opened' } },
};
