/** The problems a resolver finds in an input (none when it resolves), for tests of the spec rules. */
import { InvalidSpecError } from '../../common/input/spec';

export function problemsOf(resolve: (input: unknown) => unknown, input: unknown): { path: string; message: string }[] {
  try {
    resolve(input);
  } catch (err) {
    if (err instanceof InvalidSpecError) return err.problems;
    throw err;
  }
  return [];
}
