import fs from 'node:fs'; import os from 'node:os'; import path from 'node:path';
import { loadStories, OFF_TOPIC, type Story } from './fairytaleBench';
import { loadCampaign } from '../src/knowledge/campaign/campaign';
import { importCampaign } from '../src/knowledge/indexing/importer';
import { KnowledgeStore } from '../src/knowledge/indexing/store';
import { buildSearchTerms, stemText } from '../src/knowledge/retrieval/retrievalTerms';
import { campaignStatistics, judge, queryWeights } from '../src/knowledge/retrieval/retrievalScore';
async function camp(stories: Story[]) {
  const root = fs.mkdtempSync(path.join(os.tmpdir(), 'tune-'));
  fs.writeFileSync(path.join(root, 'campaign.yaml'), 'id: f\ntitle: f\ndefault_class: canon\n');
  const lines = new Map<string, Map<number,[number,number]>>();
  for (const s of stories) { const out: string[] = []; const m = new Map(); for (const sec of s.sections) { out.push(`## Section ${sec.section}`, ''); const a = out.length+1; out.push(...sec.text.split("\n")); m.set(sec.section,[a,out.length]); out.push(''); } fs.writeFileSync(path.join(root, s.name+'.md'), out.join('\n')); lines.set(s.name+'.md', m); }
  const store = KnowledgeStore.inMemory('f'); await importCampaign(loadCampaign(root), store);
  const passages = store.db.prepare('SELECT p.*, s.path FROM passages p JOIN sources s ON s.id=p.source_id').all() as any[];
  return { store, passages, lines };
}
function evalQ(c: any, q: string) {
  const stats = campaignStatistics(c.store); const { terms } = buildSearchTerms({ input: q }); const w = queryWeights(stats, terms);
  const chance = Math.log(Math.max(2, stats.passages));
  const js = c.passages.map((p: any) => ({ p, j: judge(stats, w, terms, stemText(JSON.parse(p.heading_path).join(' ')), stemText(p.text), p.text.length) })).filter((x: any) => x.j.matched.length > 0).sort((a: any, b: any) => b.j.score - a.j.score);
  const total = [...w.idf.values()].reduce((a, b) => a + b, 0); return { js, chance, unseen: w.unseen.length, nterms: terms.length, total };
}
(async () => {
  const split = (process.argv[2] ?? 'train') as 'train'|'val';
  const stories = loadStories(split, Number(process.argv[3] ?? 30));
  const rows: any[] = [];
  const mode = process.argv[4] ?? 'single';
  const groups = mode === 'pooled' ? [stories] : stories.map((s) => [s]);
  for (const g of groups) {
    const c = await camp(g);
    for (const s of g) for (const q of s.questions) {
      const r = evalQ(c, q.question);
      const m = c.lines.get(s.name+'.md')!; const gold = q.gold.map((x) => m.get(x)).filter(Boolean) as [number,number][];
      const ranks = r.js.map((x: any) => x.p.path === s.name+'.md' && gold.some(([a,b]) => x.p.start_line <= b && x.p.end_line >= a));
      rows.push({ kind: 'on', firstGold: ranks.indexOf(true), ev: r.js.map((x: any) => x.j.evidence / r.chance), cov: r.js.map((x: any) => x.j.evidence / r.total), unseen: r.unseen, nterms: r.nterms, tokens: r.js.map((x:any)=>x.p.token_count) });
    }
    for (const q of OFF_TOPIC[split]) { const r = evalQ(c, q); rows.push({ kind: 'off', firstGold: -1, ev: r.js.map((x: any) => x.j.evidence / r.chance), cov: r.js.map((x: any) => x.j.evidence / r.total), unseen: r.unseen, nterms: r.nterms, tokens: [] }); }
    c.store.close();
  }
  fs.writeFileSync(`/tmp/tune-${split}-${mode}.json`, JSON.stringify(rows));
  const on = rows.filter((r) => r.kind === 'on');
  for (const k of [1,3,5]) console.log(`R@${k}`, (on.filter((r) => r.firstGold >= 0 && r.firstGold < k).length / on.length).toFixed(3));
  for (const thr of [0.3,0.5,0.7,0.9,1.0]) for (const pen of [0,0.25,0.5,1]) {
    const bar = (r: any) => thr * (1 + pen * r.unseen);
    const offAb = rows.filter((r) => r.kind === 'off' && !(r.ev[0] >= bar(r))).length / rows.filter((r) => r.kind==='off').length;
    const onAb = on.filter((r) => !(r.ev[0] >= bar(r))).length / on.length;
    const r5 = on.filter((r) => r.firstGold >= 0 && r.firstGold < 5 && r.ev[r.firstGold] >= bar(r)).length / on.length;
    console.log(thr, pen, 'offAbst', offAb.toFixed(3), 'falseAbst', onAb.toFixed(3), 'R@5', r5.toFixed(3));
  }
})();
