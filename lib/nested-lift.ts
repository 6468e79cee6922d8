/**
 * Something lifted while preparation runs and applied again after it (the I/O cap, lib/io-cap.ts; the memory limit,
 * lib/memory-limit.ts): the outermost of nested preparations lifts it before and applies it again after, whatever
 * happens (a failure, a cancellation, a lift that failed half-way); an inner one leaves it lifted (configurePostgres
 * lifts the cap around initdb inside a restore's own preparation).
 */
export class NestedLift {
  /** Preparations running now. */
  private depth = 0;

  constructor(
    private readonly lift: () => Promise<void>,
    private readonly apply: () => Promise<void>,
  ) {}

  async during<T>(prepare: () => Promise<T>): Promise<T> {
    this.depth++;
    try {
      if (this.depth === 1) await this.lift();
      return await prepare();
    } finally {
      this.depth--;
      if (this.depth === 0) await this.apply();
    }
  }
}
