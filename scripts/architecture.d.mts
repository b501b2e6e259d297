// Types of architecture.mjs, for the unit test that checks the checker.
export interface Layer {
  name: string;
  paths: string[];
}
export declare const LAYERS: Layer[];
export declare function layerOf(root: string, file: string): number;
export declare function resolveImport(importer: string, spec: string): string | undefined;
export declare function importsOf(file: string, text?: string): string[];
export declare function importGraph(root: string): Map<string, string[]>;
export declare function findCycles(graph: Map<string, string[]>): string[][];
export interface UpwardImport {
  from: string;
  to: string;
  fromLayer: string;
  toLayer: string;
}
export declare function upwardImports(root: string, graph: Map<string, string[]>): UpwardImport[];
export declare function checkArchitecture(root: string): { cycles: string[][]; upward: UpwardImport[] };
