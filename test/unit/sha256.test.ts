/** The workflow-safe SHA-256 (common/core/sha256.ts) against node:crypto's, on inputs of every length and kind. */
import { createHash, randomBytes } from 'node:crypto';
import { base32, hex, sha256, utf8Bytes } from '../../common/core/sha256';

const nodeSha256 = (data: string | Uint8Array) => createHash('sha256').update(data).digest('hex');

describe('sha256', () => {
  it('gives the FIPS 180-4 digests of the standard test vectors', () => {
    expect(hex(sha256(''))).toBe('e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855');
    expect(hex(sha256('abc'))).toBe('ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad');
    expect(hex(sha256('abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq'))).toBe('248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1');
  });

  it('agrees with node:crypto on random bytes of every length across the padding boundaries (0-300 bytes, 3,000 inputs)', () => {
    const mismatches: string[] = [];
    for (let i = 0; i < 3000; i++) {
      const bytes = randomBytes(i % 301);
      if (hex(sha256(new Uint8Array(bytes))) !== nodeSha256(bytes)) mismatches.push(bytes.toString('hex'));
    }
    expect(mismatches).toEqual([]);
  });

  it('agrees with node:crypto on strings: workflow ids with "/" and "_", non-ASCII, emoji and lone surrogates (UTF-8 as Buffer makes it)', () => {
    const texts = ['a/b', 'a_b', 'x/y', 'x_y', 'nightly/experiment/gp3-0', 'café', '実験-1', '🐘/🚀', 'a\ud800b', '\udc00', 'z'.repeat(1000)];
    for (let i = 0; i < 500; i++) texts.push(String.fromCharCode(...Array.from(randomBytes(1 + (i % 40)), (b, k) => (b << (k % 9)) & 0xffff)));
    for (const text of texts) {
      expect([text, Buffer.from(utf8Bytes(text)).toString('hex')]).toEqual([text, Buffer.from(text, 'utf8').toString('hex')]);
      expect([text, hex(sha256(text))]).toEqual([text, nodeSha256(text)]);
    }
  });

  it('base 32 is RFC 4648 lower case without padding', () => {
    expect(base32(new TextEncoder().encode('foobar'))).toBe('mzxw6ytboi');
    expect(base32(new TextEncoder().encode('f'))).toBe('my');
    expect(base32(new Uint8Array(32)).length).toBe(52);
  });
});
