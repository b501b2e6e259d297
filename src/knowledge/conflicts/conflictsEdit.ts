import { changeBetween, withFrontMatterListItem, type TextEdit } from '../campaign';

/**
 * "Mark as superseding": the winning source's front matter gains `supersedes: [<loser path>]`.
 *
 * Shape: `supersedes` is a list of campaign-relative POSIX paths. The source declaring it wins over each
 * listed source wherever the two disagree (and transitively over what those supersede); agreeing facts are
 * untouched, and the superseded file keeps all its text — the conflict is shown as resolved, not deleted.
 *
 * The edit is the campaign's one front-matter editor's: one insertion or one replaced value, so the rest of
 * the file — body, comments, quoting, key order — stays byte for byte as the writer left it.
 */

/**
 * The edit that makes the file `text` declare that it supersedes `supersededPath`, or null when it already
 * does. Throws when the front matter is not valid YAML (the writer must fix it first; nothing is changed).
 */
export function supersedesEdit(text: string, supersededPath: string): TextEdit | null {
  return changeBetween(text, withFrontMatterListItem(text, 'supersedes', supersededPath));
}
