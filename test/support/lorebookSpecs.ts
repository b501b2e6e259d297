import zlib from 'node:zlib';

/**
 * Lorebook files written to each format's spec, for round trips: every field a SillyTavern entry can have at
 * a value other than its default, and the cases issue 18 found lost (case-variant keys, duplicate text,
 * Chinese titles, inactive secondary keys, regex keys, book settings).
 */

/** A SillyTavern World Info file: entries keyed by uid, the current field set plus fields a newer SillyTavern may add. */
export function fullWorldInfo(): Record<string, unknown> {
  const everyField = {
    uid: 10,
    key: ['Storm Keep', 'storm keep', '/storm ?keep/i'],
    keysecondary: ['siege', 'winter'],
    comment: 'Storm Keep',
    content: 'The keep on the cliff. {{user}} has never seen its gate open.',
    constant: false,
    vectorized: true,
    selective: true,
    selectiveLogic: 2,
    addMemo: true,
    order: 250,
    position: 4,
    disable: false,
    ignoreBudget: true,
    excludeRecursion: true,
    preventRecursion: true,
    matchPersonaDescription: true,
    matchCharacterDescription: false,
    matchCharacterPersonality: true,
    matchCharacterDepthPrompt: false,
    matchScenario: true,
    matchCreatorNotes: false,
    delayUntilRecursion: 2,
    probability: 60,
    useProbability: true,
    depth: 2,
    outletName: 'keep',
    group: 'fortresses, cliffs',
    groupOverride: true,
    groupWeight: 35,
    scanDepth: 7,
    caseSensitive: true,
    matchWholeWords: false,
    useGroupScoring: true,
    automationId: 'keep-quest',
    role: 1,
    sticky: 3,
    cooldown: 2,
    delay: 1,
    triggers: ['normal', 'swipe'],
    displayIndex: 9,
    characterFilter: { isExclude: true, names: ['Seraphina'], tags: [] },
    futureField: { from: 'a newer SillyTavern', values: [1, 2] },
  };
  const entry = (uid: number, fields: Record<string, unknown>) => ({ uid, key: [], keysecondary: [], comment: '', content: '', constant: false, selective: true, order: 100, position: 0, disable: false, displayIndex: uid, ...fields });
  return {
    entries: {
      '3': entry(3, { key: ['龙', '森林'], comment: '龙之森', content: '龙住在森林深处。' }),
      '4': entry(4, { key: ['wolf'], keysecondary: ['night'], selective: false, comment: 'Wolves', content: 'Wolves howl.' }),
      '5': entry(5, { key: ['/mag(ic|e)/i', 'spell'], comment: '', content: 'Magic is rare.' }),
      '6': entry(6, { key: ['Old name'], comment: 'Old\n  name ', content: 'A title over two lines.', constant: true, disable: true }),
      '7': entry(7, { key: ['Elise', 'elise', 'ELISE'], comment: 'Elise', content: 'Elise keeps the ledger.' }),
      '8': entry(8, { key: ['ledger'], comment: 'Ledger', content: 'Elise keeps the ledger.' }),
      '9': entry(9, { key: ['keeper'], comment: 'Keeper', content: 'Elise keeps the ledger.', position: 1 }),
      '10': everyField,
      '12': { uid: 12, key: ['bare'], comment: '', content: 'An entry with only the fields an old SillyTavern wrote.' },
    },
    name: 'Full',
    extensions: { world_tool: { version: 3 } },
    originalData: { name: 'Full', entries: [{ keys: ['bare'], content: 'x' }] },
  };
}

/** A Character Card V2 whose book has every extension SillyTavern writes, and one entry with none. */
export function fullCardV2(): Record<string, unknown> {
  return {
    spec: 'chara_card_v2',
    spec_version: '2.0',
    data: {
      name: 'Mara',
      description: 'A nun.',
      character_book: {
        name: 'Mara lore',
        description: 'What Mara knows.',
        scan_depth: 6,
        token_budget: 900,
        recursive_scanning: true,
        extensions: { tool: 'x' },
        entries: [
          {
            id: 4,
            keys: ['abbey', 'Abbey'],
            secondary_keys: ['bell'],
            content: 'The abbey bell has not rung in years.',
            extensions: {
              position: 4,
              exclude_recursion: true,
              prevent_recursion: true,
              delay_until_recursion: true,
              display_index: 2,
              probability: 70,
              useProbability: true,
              depth: 1,
              selectiveLogic: 3,
              group: 'holy',
              group_override: true,
              group_weight: 20,
              scan_depth: 3,
              case_sensitive: true,
              match_whole_words: true,
              use_group_scoring: true,
              automation_id: 'bell',
              role: 2,
              vectorized: true,
              sticky: 2,
              cooldown: 4,
              delay: 1,
              match_persona_description: true,
              custom_tool_field: 'kept',
            },
            enabled: true,
            insertion_order: 40,
            case_sensitive: true,
            name: 'Bell',
            priority: 7,
            comment: 'The abbey bell',
            selective: true,
            constant: false,
            position: 'after_char',
          },
          { keys: ['crypt'], content: 'Under the abbey.', extensions: {}, enabled: false, insertion_order: 10, name: 'Abbey Crypt', position: 'before_char' },
        ],
      },
    },
  };
}

export function agnaiMemoryBook(): Record<string, unknown> {
  return {
    kind: 'memory',
    name: 'Westhaven memory',
    description: 'Agnai book',
    userId: 'u1',
    entries: [
      { name: 'Harbour', entry: 'The harbour freezes in winter.', keywords: ['harbour', 'Harbour'], priority: 5, weight: 40, enabled: true },
      { name: '', entry: 'Gulls everywhere.', keywords: ['gull'], priority: 0, weight: 10, enabled: false },
    ],
  };
}

export function risuLorebook(): Record<string, unknown> {
  return {
    type: 'risu',
    ver: 1,
    data: [
      { key: 'tower, spire', secondkey: 'night', comment: 'Tower', content: 'The tower leans.', mode: 'normal', insertorder: 30, alwaysActive: false, selective: true, activationPercent: 80 },
      { key: 'sea', comment: 'Sea', content: 'Grey sea.', mode: 'constant', insertorder: 5, alwaysActive: true, selective: false, extentions: { risu_case_sensitive: true } },
      { key: 'folder-1', comment: 'Places', content: '', mode: 'folder', insertorder: 0, alwaysActive: false, selective: false },
    ],
  };
}

export function novelAiLorebook(): Record<string, unknown> {
  return {
    lorebookVersion: 5,
    entries: [
      {
        text: 'The Shadowfangs hunt by night.',
        contextConfig: { prefix: '', suffix: '\n', tokenBudget: 1, reservedTokens: 0, budgetPriority: 400, trimDirection: 'trimBottom', insertionType: 'newline', maximumTrimType: 'sentence', insertionPosition: -1 },
        lastUpdatedAt: 1700000000000,
        displayName: 'Shadowfangs',
        id: 'a1b2',
        keys: ['shadowfang', 'beast'],
        searchRange: 1000,
        enabled: true,
        forceActivation: true,
        keyRelative: false,
        nonStoryActivatable: false,
        category: 'c1',
        loreBiasGroups: [],
      },
      { text: 'Old lore.', displayName: '', id: 'z9', keys: ['glade'], enabled: false, forceActivation: false },
    ],
    settings: { orderByKeyLocations: false },
    categories: [{ id: 'c1', name: 'Creatures', enabled: true }],
  };
}

export function v1Card(): Record<string, unknown> {
  return { name: 'Brother Tam', description: 'A {{char}} who brews ale.', personality: 'Gruff, kind.', scenario: 'The abbey kitchen.', first_mes: 'Hello {{user}}.', mes_example: '<START>' };
}

/**
 * A zip of `files` (deflated, as a CharX card is, or stored), given as a map or as a list of names and contents
 * (which may repeat a name, as a crafted archive can).
 */
export function zip(files: Record<string, string | Buffer> | [string, string | Buffer][], options: { stored?: boolean } = {}): Buffer {
  const members = Array.isArray(files) ? files : Object.entries(files);
  const method = options.stored ? 0 : 8;
  const locals: Buffer[] = [];
  const centrals: Buffer[] = [];
  let offset = 0;
  for (const [name, content] of members) {
    const data = Buffer.isBuffer(content) ? content : Buffer.from(content);
    const packed = options.stored ? data : zlib.deflateRawSync(data);
    const nameBytes = Buffer.from(name);
    const header = (signature: number, size: number): Buffer => {
      const b = Buffer.alloc(size);
      b.writeUInt32LE(signature, 0);
      return b;
    };
    const local = header(0x04034b50, 30);
    local.writeUInt16LE(20, 4);
    local.writeUInt16LE(method, 8);
    local.writeUInt32LE(zlib.crc32(data), 14);
    local.writeUInt32LE(packed.length, 18);
    local.writeUInt32LE(data.length, 22);
    local.writeUInt16LE(nameBytes.length, 26);
    const central = header(0x02014b50, 46);
    central.writeUInt16LE(20, 4);
    central.writeUInt16LE(20, 6);
    central.writeUInt16LE(method, 10);
    central.writeUInt32LE(zlib.crc32(data), 16);
    central.writeUInt32LE(packed.length, 20);
    central.writeUInt32LE(data.length, 24);
    central.writeUInt16LE(nameBytes.length, 28);
    central.writeUInt32LE(offset, 42);
    locals.push(local, nameBytes, packed);
    centrals.push(central, nameBytes);
    offset += local.length + nameBytes.length + packed.length;
  }
  const directory = Buffer.concat(centrals);
  const end = Buffer.alloc(22);
  end.writeUInt32LE(0x06054b50, 0);
  end.writeUInt16LE(members.length, 8);
  end.writeUInt16LE(members.length, 10);
  end.writeUInt32LE(directory.length, 12);
  end.writeUInt32LE(offset, 16);
  return Buffer.concat([...locals, directory, end]);
}
