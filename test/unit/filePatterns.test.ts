import assert from 'node:assert/strict';
import { compileFilePattern, isRegexKey, regexKey, refusedRegexKeys } from '../../src/knowledge/campaign/patterns';

/**
 * The one door for patterns from files reads a pattern as JavaScript (and so SillyTavern) reads it: on texts
 * where JavaScript's own engine answers at once, the door gives the same answer, flags and JavaScript's
 * quirks included; what the linear-time engine cannot run is refused, named as written.
 */

/** Pattern, flags, and texts to test it on (all quick for a backtracking engine). */
const SAME_AS_JAVASCRIPT: [string, string, string[]][] = [
  ['defprot \\d+ (?:red|orange)', 'i', ['Computer, DefProt 7 Red!', 'DefProt Red']],
  ['DRAGON', 'i', ['a dragon', 'a drake']],
  ['^inn$', 'm', ['the road\ninn\nand more', 'the inn']],
  ['^b', '', ['a\nb', 'b']],
  ['a$', '', ['a\n', 'ba']],
  ['a.b', '', ['a\nb', 'a\rb', 'a\u2028b', 'axb']],
  ['a.b', 's', ['a\nb']],
  // JavaScript's \s holds the no-break and ideographic spaces; the engine's own is ASCII.
  ['gate\\s+of\\s+dawn', 'i', ['Gate of\u00a0Dawn', 'gate\u3000of dawn', 'gateofdawn']],
  ['[\\s,]x', '', ['\u00a0x', ',x', 'yx']],
  ['[^\\s]x', '', ['\u00a0x', 'yx']],
  ['\\Sx', '', ['\u3000x', 'yx']],
  // Legacy escapes without the u flag: \A and \p are letters, \101 is octal, \8 a digit.
  ['\\A\\z', '', ['Az', 'A']],
  ['\\p{L}', '', ['p{L}', 'é']],
  ['\\p{L}+', 'u', ['é', '7']],
  ['\\101', '', ['A', 'a']],
  ['\\8', '', ['8']],
  ['(a)\\10', '', ['a\b', 'aa0']],
  ['\\k<x>', '', ['k<x>']],
  ['[]a', '', ['a']],
  ['[^]a', '', ['\na']],
  ['[\\b]', '', ['\b', 'b']],
  ['a\\bc', '', ['a c', 'abc']],
  ['\\bhome\\b', '', ['going home.', 'homeward']],
  ['a\\/b', '', ['a/b']],
  ['\\u00e9|\\x41|\\cJ', '', ['é', 'A', '\n', 'x']],
  ['(?<=old )mill', '', ['the old mill', 'the mill']],
  ['(?<!old )mill', '', ['the old mill', 'the mill']],
  ['(?<=(old) )mill', '', ['the old mill']],
  ['(?<name>\\d+) (apples|pears)', 'gi', ['3 APPLES', 'apples']],
  ['宗门', '', ['我们的宗门很大', '门']],
  ['((a+))+$', '', ['aaaab', 'baaaa']],
  // The words every match holds rule a text out before the engine runs: what stands in an escape, a class, a
  // group or under a quantifier is not one of them, and ignoring case, every case variant still is.
  ['colou?r of (?:the )?sea', 'i', ['COLOR OF SEA', 'colour of the sea', 'colour of a sea']],
  ['ab+c{2,3}d*e', '', ['abbccde', 'abcce', 'ab+c{2,3}d*e', 'ace']],
  ['\\x41BC|xyz', '', ['ABC', 'x41BC', 'xyz']],
  ['\\u{1F600}!\\p{Lu}ron', 'u', ['😀!Aron', 'u{1F600}!p{Lu}ron']],
  ['[north]west\\k<x>', '', ['owestk<x>', 'west']],
  ['kelvin mass', 'iu', ['\u212Aelvin MA\u017F\u017F', 'KELVIN MASS', 'kelvin mas']],
  ['дракон', 'i', ['ДРАКОН', 'дракон', 'драко']],
];

describe('patterns from files: one door, linear time, JavaScript semantics', () => {
  for (const [source, flags, texts] of SAME_AS_JAVASCRIPT) {
    it(`/${source}/${flags} answers as JavaScript does`, () => {
      const compiled = compileFilePattern(source, flags);
      assert.ok('pattern' in compiled, 'refused' in compiled ? compiled.refused : '');
      const native = new RegExp(source, flags.replace(/[gy]/g, ''));
      for (const text of texts) assert.equal(compiled.pattern.test(text), native.test(text), JSON.stringify(text));
    });
  }

  it('ignoring case, matches every case variant of a letter that JavaScript does (the Kelvin sign, the long s)', () => {
    for (const letter of 'abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ') {
      const compiled = compileFilePattern(`x${letter}y`, 'iu');
      assert.ok('pattern' in compiled);
      const native = new RegExp(`x${letter}y`, 'iu');
      for (let code = 0x80; code <= 0xffff; code++) {
        if (code >= 0xd800 && code <= 0xdfff) continue;
        const text = `X${String.fromCharCode(code)}Y`;
        if (native.test(text) !== compiled.pattern.test(text)) assert.fail(`/x${letter}y/iu on U+${code.toString(16)}`);
      }
    }
  });

  it('refuses what the linear-time engine cannot run, naming it as written', () => {
    const refused = (source: string, flags = '') => {
      const compiled = compileFilePattern(source, flags);
      return 'refused' in compiled ? compiled.refused : 'ran';
    };
    assert.equal(refused('(\\w+) \\1'), 'uses a backreference \\1, which a linear-time engine cannot run');
    assert.equal(refused('(a)(b)(c)(d)(e)(f)(g)(h)(i)(j)\\10'), 'uses a backreference \\10, which a linear-time engine cannot run');
    assert.equal(refused('(?<word>\\w+) \\k<word>'), 'uses a backreference \\k<word>, which a linear-time engine cannot run');
    assert.equal(refused('dragon(?=fly)', 'i'), 'uses a lookahead (?=…), which a linear-time engine cannot run');
    assert.equal(refused('dragon(?!fly)'), 'uses a lookahead (?!…), which a linear-time engine cannot run');
    assert.equal(refused('a{1001}'), 'uses {1001} (invalid repeat count), which a linear-time engine cannot run');
    assert.equal(refused('[a--b]', 'v'), 'uses the v flag, whose set notation a linear-time engine cannot read');
    assert.equal(refused('(unclosed'), 'is not a valid regular expression (Unterminated group)');
    assert.equal(refused('a', 'ii'), "is not a valid regular expression (Invalid flags supplied to RegExp constructor 'ii')");
  });

  it('reads /pattern/flags keys, and names each key that will not run', () => {
    assert.equal(isRegexKey(' /storm ?keep/i '), true);
    assert.equal(isRegexKey('storm keep'), false);
    assert.equal(regexKey('storm keep'), null);
    const key = regexKey('/storm ?keep/i');
    assert.ok(key && 'pattern' in key && key.pattern.test('STORMKEEP'));
    assert.deepEqual(refusedRegexKeys(['inn', '/inn/', '/(a)\\1/']), [{ key: '/(a)\\1/', reason: 'uses a backreference \\1, which a linear-time engine cannot run' }]);
  });
});
