/**
 * Waiting for a height: RPC requests for the next block (long polls of followers) wait here until the block
 * is committed or their time runs out.
 */

/** Tracks the committed height and wakes waiters. */
export class Heights {
  #height: number;
  #waiters: { height: number; wake: () => void }[] = [];

  constructor(height: number) {
    this.#height = height;
  }

  /** The committed height. */
  get height(): number {
    return this.#height;
  }

  /** Records a commit and wakes those waiting for it. */
  committed(height: number): void {
    this.#height = height;
    const ready = this.#waiters.filter((w) => w.height <= height);
    this.#waiters = this.#waiters.filter((w) => w.height > height);
    for (const w of ready) w.wake();
  }

  /** Resolves once `height` is committed or after `ms`. */
  wait(height: number, ms: number): Promise<void> {
    if (height <= this.#height || ms <= 0) return Promise.resolve();
    return new Promise((resolve) => {
      const waiter = { height, wake: () => (clearTimeout(timer), resolve()) };
      const timer = setTimeout(() => {
        this.#waiters = this.#waiters.filter((w) => w !== waiter);
        resolve();
      }, ms);
      this.#waiters.push(waiter);
    });
  }

  /** Wakes every waiter (on shutdown). */
  wakeAll(): void {
    const all = this.#waiters;
    this.#waiters = [];
    for (const w of all) w.wake();
  }
}
