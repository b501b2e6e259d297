import zlib from 'node:zlib';
import { performance } from 'node:perf_hooks';
import * as esbuild from 'esbuild';
import { EntityModel, entityLinks, entitySourcesFromStore } from '../src/knowledge/entities';
import { overlap, placeLabels } from '../webview-ui/graph/labels';
import { layoutGraph, nodeRadius } from '../webview-ui/graph/layout';
import { fitView, labelRequests, layoutDrawn, overview, type OverviewEdge } from '../webview-ui/graph/overview';
import { corpusPath } from '../test/support/corpora';
import { importCorpora } from '../test/support/knowledgeFixtures';
import { percentile, round } from './retrievalBench';

/**
 * The Campaign Graph on the D&D SRD as canon (every page an entity): how long its layout takes after the
 * entity model is ready, against building that model (the anchor, what every index change already pays),
 * a refresh's layout from the previous positions, and the bytes the graph's webview script adds (minified
 * as the VSIX ships it, d3-force's and zod's shares of it) beside the play panel's script. Then what the
 * webview opens on (overview.ts, labels.ts): the overview's layout and its labels at the fitted zoom, on
 * the SRD and on ten disjoint copies of its graph (9,980 entities; copies on disk would merge into the same
 * entities by name), with the overlapping labels counted (zero is the promise).
 */

const RUNS = 5;

export interface GraphBenchResult {
  entities: number;
  links: number;
  modelMs: number;
  layoutMs: { p50: number; p95: number };
  refreshLayoutMs: number;
  layoutVsModel: number;
  bundle: { graphBytes: number; graphGzipBytes: number; d3ForceBytes: number; zodBytes: number; playPanelBytes: number };
  opening: OpeningFigures[];
}

interface OpeningFigures {
  copies: number;
  entities: number;
  drawn: number;
  overviewMs: number;
  labels: number;
  overlaps: number;
}

type BenchNode = { id: string; label: string; kind: string; mentions: number };

/** The overview of `copies` disjoint copies of the graph, laid out, and its labels at the zoom fitting 900 × 600. */
function measureOpening(nodes: readonly BenchNode[], edges: readonly OverviewEdge[], copies: number): OpeningFigures {
  const copy = (id: string, k: number) => (k === 0 ? id : `${id}~${k}`);
  const allNodes = Array.from({ length: copies }, (_, k) => nodes.map((n) => ({ ...n, id: copy(n.id, k) }))).flat();
  const allEdges = Array.from({ length: copies }, (_, k) => edges.map((e) => ({ ...e, from: copy(e.from, k), to: copy(e.to, k) }))).flat();
  const radius = (n: BenchNode) => nodeRadius(n.mentions);
  const start = performance.now();
  const drawn = overview(allNodes, allEdges, new Set());
  const placed = layoutDrawn(drawn, radius, new Map());
  const overviewMs = round(performance.now() - start);
  const labels = placeLabels(labelRequests(drawn, placed, radius), fitView([...placed.values()], 900, 600)!.k);
  const overlaps = labels.reduce((n, a, i) => n + labels.slice(i + 1).filter((b) => overlap(a, b)).length, 0);
  return { copies, entities: allNodes.length, drawn: drawn.nodes.length + drawn.groups.length, overviewMs, labels: labels.length, overlaps };
}

async function bundleBytes(entry: string): Promise<{ bytes: number; gzip: number; d3Force: number; zod: number }> {
  const result = await esbuild.build({ entryPoints: [entry], bundle: true, minify: true, format: 'iife', platform: 'browser', target: 'es2022', write: false, metafile: true, logLevel: 'silent' });
  const output = result.outputFiles[0]!.contents;
  const [meta] = Object.values(result.metafile.outputs);
  const share = (library: RegExp) => Object.entries(meta!.inputs).filter(([file]) => library.test(file)).reduce((n, [, input]) => n + input.bytesInOutput, 0);
  return { bytes: output.byteLength, gzip: zlib.gzipSync(output, { level: 9 }).byteLength, d3Force: share(/node_modules[\\/]d3-/), zod: share(/node_modules[\\/]zod[\\/]/) };
}

export async function runGraphBench(log: (line: string) => void = () => undefined): Promise<GraphBenchResult> {
  const library = await importCorpora('graph', { srd: { corpus: corpusPath('dnd-srd-5.1'), class: 'canon' } });
  try {
    let start = performance.now();
    const model = new EntityModel(entitySourcesFromStore(library.store));
    const entities = model.canonEntities();
    const links = entityLinks(model);
    const modelMs = round(performance.now() - start);
    const nodes = entities.map((e) => ({ id: e.key, radius: nodeRadius(model.usage(e.key).mentions) }));
    const samples: number[] = [];
    let placed = new Map<string, { x: number; y: number }>();
    for (let i = 0; i < RUNS; i++) {
      start = performance.now();
      placed = layoutGraph(nodes, links);
      samples.push(performance.now() - start);
    }
    samples.sort((a, b) => a - b);
    start = performance.now();
    layoutGraph(nodes, links, placed);
    const refreshLayoutMs = round(performance.now() - start);
    const graph = await bundleBytes('webview-ui/graph/main.ts');
    const play = await bundleBytes('webview-ui/main.ts');
    const layoutMs = { p50: round(percentile(samples, 0.5)), p95: round(percentile(samples, 0.95)) };
    const benchNodes = entities.map((e) => ({ id: e.key, label: e.display, kind: e.group, mentions: model.usage(e.key).mentions }));
    const opening = [1, 10].map((copies) => measureOpening(benchNodes, links, copies));
    const result: GraphBenchResult = {
      entities: entities.length,
      links: links.length,
      modelMs,
      layoutMs,
      refreshLayoutMs,
      layoutVsModel: round(layoutMs.p50 / modelMs),
      bundle: { graphBytes: graph.bytes, graphGzipBytes: graph.gzip, d3ForceBytes: graph.d3Force, zodBytes: graph.zod, playPanelBytes: play.bytes },
      opening,
    };
    log(`SRD as canon: ${result.entities} entities, ${result.links} links; entity model and links (anchor) ${modelMs} ms`);
    log(`layout p50 ${layoutMs.p50} ms, p95 ${layoutMs.p95} ms (×${result.layoutVsModel} the model); a refresh from the previous layout ${refreshLayoutMs} ms`);
    log(`graph webview script (what the graph adds to the VSIX) ${graph.bytes} bytes minified (${graph.gzip} gzipped), of which d3-force ${graph.d3Force} and zod/mini ${graph.zod}; the play panel's ${play.bytes}`);
    for (const o of opening) {
      log(`opens on (${o.copies === 1 ? 'the SRD' : `${o.copies} copies`}, ${o.entities} entities): ${o.drawn} nodes drawn, overview and its layout ${o.overviewMs} ms; ${o.labels} labels at the fitted zoom, ${o.overlaps} overlapping`);
    }
    return result;
  } finally {
    library.dispose();
  }
}
