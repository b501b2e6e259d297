import { corpusPath } from '../test/support/corpora';
import { importCorpora } from '../test/support/knowledgeFixtures';
import { count, headingQuestion, newTally, productSearch, RawBm25, rulebookHeadings, summarize, type Located, type QualityRow } from './fairytaleBench';

/**
 * A rulebook asked about its own sections: "How does Attack Rolls and Damage work?" of the D&D SRD, for every
 * heading that names one section only. A hit is a returned passage holding the section's first line. Beside
 * it, raw FTS5 bm25 (`porter unicode61`, with a stop list, and on every word as the old anchor) over the same passages, heading trail and text, in the same run. Nothing
 * was tuned on these questions: they measure how chunking and ranking carry over to a rulebook's structure.
 */

export async function measureRulebook(log: (line: string) => void = () => undefined): Promise<{ questions: number; product: QualityRow; bm25: QualityRow; bm25EveryWord: QualityRow }> {
  const all = rulebookHeadings('dnd-srd-5.1');
  const uses = new Map<string, number>();
  for (const h of all) uses.set(h.heading.toLowerCase(), (uses.get(h.heading.toLowerCase()) ?? 0) + 1);
  const headings = all.filter((h) => uses.get(h.heading.toLowerCase()) === 1);

  const library = await importCorpora('rulebook', { srd: { corpus: corpusPath('dnd-srd-5.1'), class: 'reference' } });
  const bm25Anchor = new RawBm25();
  try {
    const passages = library.store.db
      .prepare('SELECT p.heading_path AS trail, p.text, p.start_line AS start, p.end_line AS end, p.token_count AS tokens, s.path FROM passages p JOIN sources s ON s.id = p.source_id')
      .all() as (Located & { trail: string; text: string })[];
    for (const { trail, text, ...row } of passages) bm25Anchor.addRow(row, `${(JSON.parse(trail) as string[]).join(' ')}\n${text}`);

    const product = newTally();
    const bm25 = newTally();
    const everyWord = newTally();
    for (const h of headings) {
      const question = headingQuestion(h.heading);
      // The section's first line: in the passage under its heading, or in the one it runs on into.
      const gold = { path: `srd/${h.file}`, ranges: [[h.firstLine, h.firstLine] as [number, number]] };
      count(product, await productSearch(library.store, question), gold);
      count(bm25, bm25Anchor.search(question), gold);
      count(everyWord, bm25Anchor.search(question, { stopList: false }), gold);
    }
    const result = { questions: headings.length, product: summarize(product), bm25: summarize(bm25), bm25EveryWord: summarize(everyWord) };
    log(`D&D SRD asked about its own sections: ${result.questions} questions ("How does <heading> work?"; hit = a returned passage holding the section's first line)`);
    log(`  ${''.padEnd(20)} R@1    R@5    tokens  got nothing`);
    for (const [label, r] of [['bm25 every word', result.bm25EveryWord], ['bm25 stop list', result.bm25], ['product', result.product]] as const) {
      log(`  ${label.padEnd(20)} ${r.recall[1]!.toFixed(3)}  ${r.recall[5]!.toFixed(3)}  ${String(r.tokensPerQuestion).padStart(6)}  ${`${(r.falseAbstention * 100).toFixed(1)}%`.padStart(11)}`);
    }
    return result;
  } finally {
    bm25Anchor.close();
    library.dispose();
  }
}
