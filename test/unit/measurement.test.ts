import { STALL_SECONDS, tpsStall } from '../../common/results/attempts';

describe('stalled TPS runs', () => {
  it('finds the longest stretch of seconds without a transaction, 1-based as pgbench counts', () => {
    expect(tpsStall([500, 0, 0, 0, 0, 0, 480, 0, 0, 0, 0, 0, 0, 0, 470])).toEqual({ from: 8, to: 14, seconds: 7 });
  });
  it('counts a stall that lasts to the end of the run', () => {
    expect(tpsStall([500, 490, 0, 0, 0, 0, 0])).toEqual({ from: 3, to: 7, seconds: 5 });
  });
  it('is not fooled by slow seconds or a short pause', () => {
    expect(tpsStall([500, 3, 1, 2, 1, 1, 480])).toBeNull();
    expect(tpsStall([500, ...Array(STALL_SECONDS - 1).fill(0), 480])).toBeNull();
    expect(tpsStall([])).toBeNull();
  });
});
