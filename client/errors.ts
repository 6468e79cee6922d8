/** A mistake the user can fix (bad flag, bad spec): printed without a stack trace, exit code 2. */
export class UserError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'UserError';
  }
}
