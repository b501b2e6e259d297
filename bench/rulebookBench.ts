import { corpusPath } from '../test/support/corpora';
import { importCorpora } from '../test/support/knowledgeFixtures';
import { headingQuestion, productSearch, RawBm25, rulebookHeadings, type Located, type RulebookHeading } from './fairytaleBench';

/**
 * A rulebook asked about its own sections: "How does Attack Rolls and Damage work?" of the D&D SRD, for every
 * heading that names one section only. A hit is a returned passage holding the section's first line. Beside
 * it, raw FTS5 bm25 (`porter unicode61`) over the same passages, heading trail and text, in the same run. Nothing
 * was tuned on these questions: they measure how chunking and ranking carry over to a rulebook's structure.
 */

interface Row {
  recall1: number;
  recall5: number;
  tokens: number;
  nothing: number;
}

export async function measureRulebook(log: (line: string) => void = () => undefined): Promise<{ questions: number; product: Row; bm25: Row }> {
  const all = rulebookHeadings('dnd-srd-5.1');
  const count = new Map<string, number>();
  for (const h of all) count.set(h.heading.toLowerCase(), (count.get(h.heading.toLowerCase()) ?? 0) + 1);
  const headings = all.filter((h) => count.get(h.heading.toLowerCase()) === 1);

  const library = await importCorpora('rulebook', { srd: { corpus: corpusPath('dnd-srd-5.1'), class: 'reference' } });
  const bm25Anchor = new RawBm25();
  try {
    const passages = library.store.db
      .prepare('SELECT p.heading_path AS trail, p.text, p.start_line AS start, p.end_line AS end, p.token_count AS tokens, s.path FROM passages p JOIN sources s ON s.id = p.source_id')
      .all() as (Located & { trail: string; text: string })[];
    for (const { trail, text, ...row } of passages) bm25Anchor.addRow(row, `${(JSON.parse(trail) as string[]).join(' ')}\n${text}`);

    const tally = () => ({ at1: 0, at5: 0, tokens: 0, nothing: 0 });
    const product = tally();
    const bm25 = tally();
    const tallyHits = (t: ReturnType<typeof tally>, found: Located[], gold: RulebookHeading) => {
      // The section's first line: in the passage under its heading, or in the one it runs on into.
      const rank = found.findIndex((f) => f.path === `srd/${gold.file}` && f.start <= gold.firstLine && f.end >= gold.firstLine);
      if (rank === 0) t.at1++;
      if (rank !== -1) t.at5++;
      if (found.length === 0) t.nothing++;
      t.tokens += found.reduce((n, f) => n + f.tokens, 0);
    };
    for (const h of headings) {
      const question = headingQuestion(h.heading);
      tallyHits(product, await productSearch(library.store, question), h);
      tallyHits(bm25, bm25Anchor.search(question), h);
    }
    const row = (t: ReturnType<typeof tally>): Row => ({
      recall1: Math.round((t.at1 / headings.length) * 1000) / 1000,
      recall5: Math.round((t.at5 / headings.length) * 1000) / 1000,
      tokens: Math.round(t.tokens / headings.length),
      nothing: Math.round((t.nothing / headings.length) * 1000) / 1000,
    });
    const result = { questions: headings.length, product: row(product), bm25: row(bm25) };
    log(`D&D SRD asked about its own sections: ${result.questions} questions ("How does <heading> work?"; hit = a returned passage holding the section's first line)`);
    log(`  ${''.padEnd(10)} R@1    R@5    tokens  got nothing`);
    for (const [label, r] of [['raw bm25', result.bm25], ['product', result.product]] as const) {
      log(`  ${label.padEnd(10)} ${r.recall1.toFixed(3)}  ${r.recall5.toFixed(3)}  ${String(r.tokens).padStart(6)}  ${`${(r.nothing * 100).toFixed(1)}%`.padStart(11)}`);
    }
    return result;
  } finally {
    bm25Anchor.close();
    library.dispose();
  }
}
