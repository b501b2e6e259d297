import assert from 'node:assert/strict';
import { changedWriterOnlyFields, splitFrontMatter, withFrontMatterField, withoutFrontMatterFields, writerOnlyField, writerOnlyFieldsOf } from '../../src/knowledge/campaign/frontMatter';

describe('knowledge: front matter', () => {
  it('reads every known field and says where the body starts', () => {
    const text = '---\nclass: Canon\nenabled: false\nvisibility: hidden\nalways_include: true\npriority: high\ntags: town\nentities: [Mara, Ilse]\ntitle: 1984\nnotes: keep\nscope: initial\n---\n# Body\n';
    const split = splitFrontMatter(text);
    assert.deepEqual(split.issues, []);
    assert.deepEqual(split.meta, {
      class: 'canon',
      enabled: false,
      visibility: 'hidden',
      always_include: true,
      priority: 'high',
      tags: ['town'],
      entities: ['Mara', 'Ilse'],
      title: '1984',
      notes: 'keep',
      scope: 'initial',
    });
    assert.equal(split.body, '# Body\n');
    assert.equal(split.bodyStartLine, 13);
  });

  it('reports an unknown class as an error on its line, never a silent default', () => {
    const split = splitFrontMatter('---\ntitle: X\nclass: lore\n---\ntext');
    assert.equal(split.meta.class, undefined);
    assert.equal(split.issues.length, 1);
    assert.equal(split.issues[0]!.severity, 'error');
    assert.equal(split.issues[0]!.line, 3);
    assert.match(split.issues[0]!.message, /'class' is 'lore': must be one of canon, reference, inspiration/);
  });

  it('reports YAML that does not parse, with a line in the file', () => {
    const split = splitFrontMatter('---\ntitle: "unterminated\nclass: canon\n---\ntext');
    assert.equal(split.issues[0]?.code, 'front-matter-yaml');
    assert.match(split.issues[0]!.message, /not valid YAML/);
    assert.ok(split.issues[0]!.line! >= 2);
  });

  it('reports front matter that is a list, or never closed', () => {
    assert.equal(splitFrontMatter('---\n- a\n- b\n---\nx').issues[0]?.code, 'front-matter-shape');
    const unclosed = splitFrontMatter('---\nclass: canon\n# Heading\n');
    assert.equal(unclosed.issues[0]?.code, 'front-matter-unclosed');
    assert.equal(unclosed.issues[0]?.line, 1);
  });

  it('leaves other tools\' keys alone but flags a likely typo', () => {
    const split = splitFrontMatter('---\nlayout: post\nclas: canon\n---\n');
    assert.deepEqual(split.issues.map((i) => [i.severity, i.line, i.message]), [['warning', 3, "unknown front matter key 'clas' is ignored; did you mean 'class'?"]]);
  });

  it('treats a file without front matter as all body, and handles CRLF', () => {
    assert.deepEqual(splitFrontMatter('# Just text\n'), { meta: {}, body: '# Just text\n', bodyStartLine: 1, present: false, issues: [] });
    const crlf = splitFrontMatter('---\r\nclass: reference\r\n---\r\nBody\r\n');
    assert.equal(crlf.meta.class, 'reference');
    assert.equal(crlf.body, 'Body\r\n');
    assert.equal(crlf.bodyStartLine, 4);
  });

  describe('editing one field', () => {
    it('replaces an existing value and keeps every other byte', () => {
      const text = '---\ntitle:   Mara  # the healer\nenabled: true\ntags: [a, b]\n---\n\nBody  with  spacing\n';
      assert.equal(withFrontMatterField(text, 'enabled', false), text.replace('enabled: true', 'enabled: false'));
    });

    it('adds a missing key before the closing fence, keeping CRLF line ends', () => {
      const text = '---\r\ntitle: X\r\n---\r\nBody\r\n';
      assert.equal(withFrontMatterField(text, 'enabled', false), '---\r\ntitle: X\r\nenabled: false\r\n---\r\nBody\r\n');
    });

    it('creates front matter when the file has none', () => {
      assert.equal(withFrontMatterField('# Mara\n', 'enabled', false), '---\nenabled: false\n---\n# Mara\n');
    });

    it('round-trips through the parser', () => {
      const edited = withFrontMatterField('---\nclass: canon\n---\nx', 'enabled', false);
      assert.equal(splitFrontMatter(edited).meta.enabled, false);
      assert.equal(splitFrontMatter(withFrontMatterField(edited, 'enabled', true)).meta.enabled, true);
      assert.equal(splitFrontMatter(withFrontMatterField('x', 'title', 'A: colon')).meta.title, 'A: colon');
    });

    it('refuses to edit front matter that is broken rather than guessing', () => {
      assert.throws(() => withFrontMatterField('---\ntitle: [x\n---\n', 'enabled', false), /not valid YAML/);
    });
  });

  describe('the fields only the writer may change', () => {
    const claimed = (before: string, after: string) => changedWriterOnlyFields(writerOnlyFieldsOf(before)!, writerOnlyFieldsOf(after)!);

    it('sees a change to one in YAML or TOML, whatever the case of its key, and nothing else', () => {
      const yaml = '---\ntitle: Aldric\nvisibility: hidden\n---\n# Aldric\n';
      assert.deepEqual(claimed(yaml, yaml.replace('title: Aldric', 'title: Brother Aldric')), []);
      assert.deepEqual(claimed(yaml, yaml.replace('hidden', 'normal')), ['visibility']);
      assert.deepEqual(claimed(yaml, yaml.replace('visibility: hidden\n', '')), ['visibility']);
      assert.deepEqual(claimed(yaml, yaml.replace('---\n#', 'Visibility: normal\n---\n#')), ['visibility']);
      assert.deepEqual(claimed(yaml, yaml.replace('---\n#', 'sillytavern: {entry: {constant: true}}\n---\n#')), ['sillytavern']);
      const toml = '+++\ntitle = "Gate"\nlocked = true\n+++\n# Gate\n';
      assert.deepEqual(claimed(toml, toml.replace('locked = true', 'Locked = true')), ['locked']);
      assert.deepEqual(claimed('# No front matter\n', '---\nalways_include: true\n---\n# No front matter\n'), ['always_include']);
      assert.equal(writerOnlyFieldsOf('---\nvisibility: [\n---\n'), undefined, 'unreadable front matter says nothing for sure');
      assert.equal(writerOnlyField(' Secondary_Keys '), 'secondary_keys');
      assert.equal(writerOnlyField('title'), undefined);
    });

    it('are left out of a page line by line, every other byte kept, comments and line endings too', () => {
      const page = '---\r\ntitle: The Ferry # named in play\r\nAlways_Include: true\r\nsupersedes:\r\n  - places/gate.md # the old one\r\n  - places/bridge.md\r\nentities: [Ferry]\r\nnotes: |\r\n  keep\r\n---\r\n# The Ferry\r\n';
      const { text, dropped } = withoutFrontMatterFields(page, (key) => writerOnlyField(key) !== undefined);
      assert.deepEqual(dropped, ['Always_Include', 'supersedes']);
      assert.equal(text, '---\r\ntitle: The Ferry # named in play\r\nentities: [Ferry]\r\nnotes: |\r\n  keep\r\n---\r\n# The Ferry\r\n');
      assert.equal(withoutFrontMatterFields('---\ntitle: x\n---\n', () => false).text, '---\ntitle: x\n---\n');
      assert.throws(() => withoutFrontMatterFields('---\n{class: canon, title: x}\n---\n', (key) => key === 'class'), /one \{…\} map/);
    });
  });
});
