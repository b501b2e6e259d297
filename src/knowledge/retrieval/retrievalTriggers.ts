import type { KnowledgeStore } from '../indexing';
import type { KnowledgeClass, SourceTriggers } from '../campaign';
import { isMeaningfulWord, nameTokens, tokenize } from './retrievalTerms';
import { findWikiLinks } from '../names';
import { plainKeyIn } from './worldInfo';

/**
 * Deterministic triggers: a source is eligible because the text mentions one of its keys or names, the
 * way SillyTavern fires a World Info entry — separate from relevance, which only ranks what it admits.
 * Keys follow SillyTavern's matching (case-insensitive and inside words unless the entry says otherwise;
 * secondary keys under the selective logic); a source without keys fires on its names (front matter
 * `entities:`, a canon `title:`) and, for canon, on what other files call it in `[[wiki links]]` (`[[Sister Mara]]`
 * names the file whose name, title or alias it is), matched as whole words. Nothing fires when nothing is mentioned.
 */

export interface Trigger {
  sourceId: string;
  /** What was mentioned, as the source spells it. */
  mention: string;
  kind: 'key' | 'name' | 'link';
}

interface Rule {
  sourceId: string;
  cls: KnowledgeClass;
  triggers: SourceTriggers;
  /** Names as the words they must appear as, leading articles dropped. */
  names: { name: string; tokens: string[]; kind: 'name' | 'link' }[];
}

/** A name's words as one key: "Sister_Mara", "sister-mara" and "The Sister Mara" are one name. */
const nameKey = (name: string): string => nameTokens(name).join(' ');

/**
 * What the campaign's `[[links]]` call each source: a target resolves to the file of that name (as Obsidian
 * reads `[[Page]]`), else to the source titled or aliased so. Only passages holding `[[` are read.
 */
function linkNames(store: KnowledgeStore): Map<string, Set<string>> {
  const sources = store
    .statement('SELECT s.id, s.path, s.title, t.triggers FROM sources s LEFT JOIN source_triggers t ON t.source_id = s.id WHERE s.campaign_id = ?')
    .all(store.campaignId) as { id: string; path: string; title: string; triggers: string | null }[];
  const byFile = new Map<string, string>();
  const byName = new Map<string, string>();
  for (const source of sources) {
    byFile.set(nameKey(source.path.replace(/^.*\//, '').replace(/\.[^.]*$/, '')), source.id);
    const aliases = source.triggers ? (JSON.parse(source.triggers) as SourceTriggers).aliases : [];
    for (const name of [source.title, ...aliases]) if (!byName.has(nameKey(name))) byName.set(nameKey(name), source.id);
  }
  const named = new Map<string, Set<string>>();
  const texts = store.statement("SELECT text FROM passages WHERE campaign_id = ? AND instr(text, '[[') > 0").all(store.campaignId) as { text: string }[];
  for (const { text } of texts) {
    for (const link of text.split('\n').flatMap((line, i) => (line.includes('[[') ? findWikiLinks(line, i) : []))) {
      for (const target of [link.target, ...(link.alternative ? [link.alternative.target] : [])]) {
        const id = byFile.get(nameKey(target)) ?? byName.get(nameKey(target));
        if (id === undefined) continue;
        const names = named.get(id);
        if (names) names.add(target);
        else named.set(id, new Set([target]));
        break;
      }
    }
  }
  return named;
}

const rulesCache = new WeakMap<KnowledgeStore, { key: string; rules: Rule[] }>();

/** `version`: the index's (indexVersion), as the search read it. */
function rules(store: KnowledgeStore, version: string): Rule[] {
  const cached = rulesCache.get(store);
  if (cached && cached.key === version) return cached.rules;
  const linked = linkNames(store);
  const rows = store
    .statement(
      `SELECT s.id AS source_id, s.class, t.triggers FROM sources s LEFT JOIN source_triggers t ON t.source_id = s.id
       WHERE s.campaign_id = ? AND (t.source_id IS NOT NULL OR s.id IN (SELECT value FROM json_each(?)))`,
    )
    .all(store.campaignId, JSON.stringify([...linked.keys()])) as { source_id: string; class: KnowledgeClass; triggers: string | null }[];
  const built = rows.map((row) => {
    const triggers: SourceTriggers = row.triggers
      ? (JSON.parse(row.triggers) as SourceTriggers)
      : { keys: [], secondaryKeys: [], selectiveLogic: 'and_any', caseSensitive: false, matchWholeWords: false, aliases: [], title: null };
    // Keys, where declared, decide alone (a lorebook import also lists them as entities, and the selective
    // logic must not be bypassed by that). A reference page titled "Combat" is not an entity: its title would
    // fire on every sentence about combat, and the SRD's index linking [[Jump]] would fire it on every jump.
    const declared = triggers.keys.length > 0 ? [] : [...triggers.aliases, ...(row.class === 'canon' && triggers.title ? [triggers.title] : [])];
    const linkedAs =
      triggers.keys.length > 0 || row.class !== 'canon' ? [] : [...(linked.get(row.source_id) ?? [])].filter((n) => !declared.some((d) => nameKey(d) === nameKey(n)));
    const names = [...declared.map((name) => ({ name, kind: 'name' as const })), ...linkedAs.map((name) => ({ name, kind: 'link' as const }))]
      .map((n) => ({ ...n, tokens: nameTokens(n.name) }))
      .filter((n) => n.tokens.length > 1 || (n.tokens.length === 1 && isMeaningfulWord(n.tokens[0]!)));
    return { sourceId: row.source_id, cls: row.class, triggers, names };
  });
  rulesCache.set(store, { key: version, rules: built });
  return built;
}

/** SillyTavern's key test (worldInfo.ts holds it: activation and mentions match keys alike). */
const keyMentioned = (key: string, text: { raw: string; lower: string }, t: SourceTriggers): boolean => plainKeyIn(key, text, t);

function secondaryAllows(t: SourceTriggers, text: { raw: string; lower: string }): boolean {
  if (t.secondaryKeys.length === 0) return true;
  const found = t.secondaryKeys.filter((k) => keyMentioned(k, text, t)).length;
  switch (t.selectiveLogic) {
    case 'and_any':
      return found > 0;
    case 'and_all':
      return found === t.secondaryKeys.length;
    case 'not_any':
      return found === 0;
    case 'not_all':
      return found < t.secondaryKeys.length;
  }
}

function containsPhrase(words: readonly string[], phrase: readonly string[]): boolean {
  outer: for (let i = 0; i + phrase.length <= words.length; i++) {
    for (let j = 0; j < phrase.length; j++) if (words[i + j] !== phrase[j]) continue outer;
    return true;
  }
  return false;
}

/**
 * The sources the text mentions by a key or a name, each with the first mention found. With `worldInfoApart`,
 * sources carrying SillyTavern behaviour are left to its activation (a prompt's), never fired by a mention.
 */
export function triggeredSources(store: KnowledgeStore, version: string, scanned: string, worldInfoApart = false): Map<string, Trigger> {
  const fired = new Map<string, Trigger>();
  const all = rules(store, version);
  if (all.length === 0 || scanned.trim() === '') return fired;
  const text = { raw: scanned, lower: scanned.toLowerCase() };
  const words = tokenize(scanned);
  for (const rule of all) {
    if (worldInfoApart && rule.triggers.worldInfo) continue;
    const key = rule.triggers.keys.find((k) => keyMentioned(k, text, rule.triggers));
    if (key !== undefined && secondaryAllows(rule.triggers, text)) {
      fired.set(rule.sourceId, { sourceId: rule.sourceId, mention: key, kind: 'key' });
      continue;
    }
    // The fullest name mentioned: "Sister Mara", not "Mara", when the turn says "Sister Mara".
    const name = rule.names.filter((n) => containsPhrase(words, n.tokens)).sort((a, b) => b.tokens.length - a.tokens.length)[0];
    if (name) fired.set(rule.sourceId, { sourceId: rule.sourceId, mention: name.name, kind: name.kind });
  }
  return fired;
}

/**
 * "key 'ability' mentioned" / "name 'Tuvdak the Magnificent' mentioned" / "'Sister Mara' mentioned, which
 * other files link to as [[Sister Mara]]": why a triggered passage was admitted.
 */
export function triggerReason(trigger: Trigger): string {
  return trigger.kind === 'link'
    ? `'${trigger.mention}' mentioned, which other files link to as [[${trigger.mention}]]`
    : `${trigger.kind} '${trigger.mention}' mentioned`;
}
