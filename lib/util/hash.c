/* SHA-256 after FIPS 180-4; hash64 is a simple multiply-xorshift mix. */
#include <string.h>

#include "pragma/hash.h"

static const uint32_t K[64] = {
	0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5, 0x3956c25b, 0x59f111f1, 0x923f82a4, 0xab1c5ed5,
	0xd807aa98, 0x12835b01, 0x243185be, 0x550c7dc3, 0x72be5d74, 0x80deb1fe, 0x9bdc06a7, 0xc19bf174,
	0xe49b69c1, 0xefbe4786, 0x0fc19dc6, 0x240ca1cc, 0x2de92c6f, 0x4a7484aa, 0x5cb0a9dc, 0x76f988da,
	0x983e5152, 0xa831c66d, 0xb00327c8, 0xbf597fc7, 0xc6e00bf3, 0xd5a79147, 0x06ca6351, 0x14292967,
	0x27b70a85, 0x2e1b2138, 0x4d2c6dfc, 0x53380d13, 0x650a7354, 0x766a0abb, 0x81c2c92e, 0x92722c85,
	0xa2bfe8a1, 0xa81a664b, 0xc24b8b70, 0xc76c51a3, 0xd192e819, 0xd6990624, 0xf40e3585, 0x106aa070,
	0x19a4c116, 0x1e376c08, 0x2748774c, 0x34b0bcb5, 0x391c0cb3, 0x4ed8aa4a, 0x5b9cca4f, 0x682e6ff3,
	0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208, 0x90befffa, 0xa4506ceb, 0xbef9a3f7, 0xc67178f2,
};

#define ROR(x, n) (((x) >> (n)) | ((x) << (32 - (n))))

static void compress(uint32_t h[8], const unsigned char *p)
{
	uint32_t w[64], a, b, c, d, e, f, g, hh;

	for (int i = 0; i < 16; i++)
		w[i] = (uint32_t)p[4 * i] << 24 | (uint32_t)p[4 * i + 1] << 16 | (uint32_t)p[4 * i + 2] << 8 | p[4 * i + 3];
	for (int i = 16; i < 64; i++) {
		uint32_t s0 = ROR(w[i - 15], 7) ^ ROR(w[i - 15], 18) ^ (w[i - 15] >> 3);
		uint32_t s1 = ROR(w[i - 2], 17) ^ ROR(w[i - 2], 19) ^ (w[i - 2] >> 10);
		w[i] = w[i - 16] + s0 + w[i - 7] + s1;
	}
	a = h[0], b = h[1], c = h[2], d = h[3], e = h[4], f = h[5], g = h[6], hh = h[7];
	for (int i = 0; i < 64; i++) {
		uint32_t t1 = hh + (ROR(e, 6) ^ ROR(e, 11) ^ ROR(e, 25)) + ((e & f) ^ (~e & g)) + K[i] + w[i];
		uint32_t t2 = (ROR(a, 2) ^ ROR(a, 13) ^ ROR(a, 22)) + ((a & b) ^ (a & c) ^ (b & c));
		hh = g, g = f, f = e, e = d + t1, d = c, c = b, b = a, a = t1 + t2;
	}
	h[0] += a, h[1] += b, h[2] += c, h[3] += d, h[4] += e, h[5] += f, h[6] += g, h[7] += hh;
}

void pragma_sha256_init(struct pragma_sha256 *s)
{
	static const uint32_t init[8] = { 0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a,
					  0x510e527f, 0x9b05688c, 0x1f83d9ab, 0x5be0cd19 };
	memcpy(s->h, init, sizeof(init));
	s->total = 0;
	s->fill = 0;
}

void pragma_sha256_update(struct pragma_sha256 *s, const void *data, size_t len)
{
	const unsigned char *p = data;

	s->total += len;
	if (s->fill) {
		size_t take = 64 - s->fill < len ? 64 - s->fill : len;
		memcpy(s->block + s->fill, p, take);
		s->fill += take;
		p += take;
		len -= take;
		if (s->fill < 64)
			return;
		compress(s->h, s->block);
		s->fill = 0;
	}
	for (; len >= 64; p += 64, len -= 64)
		compress(s->h, p);
	memcpy(s->block, p, len);
	s->fill = len;
}

void pragma_sha256_field(struct pragma_sha256 *s, const void *data, size_t len)
{
	uint64_t n = len;

	pragma_sha256_update(s, &n, sizeof(n));
	pragma_sha256_update(s, data, len);
}

void pragma_sha256_final(struct pragma_sha256 *s, unsigned char out[32])
{
	uint64_t bits = s->total * 8;
	unsigned char pad = 0x80, zero = 0, len[8];

	pragma_sha256_update(s, &pad, 1);
	while (s->fill != 56)
		pragma_sha256_update(s, &zero, 1);
	for (int i = 0; i < 8; i++)
		len[i] = (unsigned char)(bits >> (56 - 8 * i));
	pragma_sha256_update(s, len, 8);
	for (int i = 0; i < 8; i++) {
		out[4 * i] = (unsigned char)(s->h[i] >> 24);
		out[4 * i + 1] = (unsigned char)(s->h[i] >> 16);
		out[4 * i + 2] = (unsigned char)(s->h[i] >> 8);
		out[4 * i + 3] = (unsigned char)s->h[i];
	}
}

void pragma_sha256_hex(struct pragma_sha256 *s, char out[65])
{
	static const char hex[] = "0123456789abcdef";
	unsigned char d[32];

	pragma_sha256_final(s, d);
	for (int i = 0; i < 32; i++) {
		out[2 * i] = hex[d[i] >> 4];
		out[2 * i + 1] = hex[d[i] & 15];
	}
	out[64] = '\0';
}

void pragma_sha256_str(const void *data, size_t len, char out[65])
{
	struct pragma_sha256 s;

	pragma_sha256_init(&s);
	pragma_sha256_update(&s, data, len);
	pragma_sha256_hex(&s, out);
}

static inline uint64_t mix(uint64_t x)
{
	x ^= x >> 32;
	x *= 0xd6e8feb86659fd93ULL;
	x ^= x >> 32;
	return x;
}

uint64_t pragma_hash64(const void *data, size_t len, uint64_t seed)
{
	const unsigned char *p = data;
	uint64_t a = seed ^ 0x9e3779b97f4a7c15ULL, b = len, c = ~seed, d = 0x85ebca6bULL;
	size_t i = 0;

	/* Four independent lanes keep the multiplier pipeline busy. */
	for (; i + 32 <= len; i += 32) {
		uint64_t w[4];
		memcpy(w, p + i, 32);
		a = (a ^ w[0]) * 0x9fb21c651e98df25ULL;
		b = (b ^ w[1]) * 0xc2b2ae3d27d4eb4fULL;
		c = (c ^ w[2]) * 0x165667b19e3779f9ULL;
		d = (d ^ w[3]) * 0xff51afd7ed558ccdULL;
		a ^= a >> 29, b ^= b >> 31, c ^= c >> 27, d ^= d >> 33;
	}
	for (; i + 8 <= len; i += 8) {
		uint64_t w;
		memcpy(&w, p + i, 8);
		a = mix(a ^ w);
	}
	if (i < len) {
		uint64_t w = 0;
		memcpy(&w, p + i, len - i);
		b = mix(b ^ w ^ ((uint64_t)(len - i) << 56));
	}
	return mix(a ^ mix(b + 0x632be59bd9b4e019ULL) ^ mix(c + d * 3) ^ (uint64_t)len);
}
