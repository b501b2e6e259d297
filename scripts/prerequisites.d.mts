// Types of prerequisites.mjs, for the scripts that share its Chromium path.
export declare const CHROMIUM: string;
