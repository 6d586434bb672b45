/* SHA-256 for content keys; a fast 64-bit hash for data integrity checks. */
#ifndef PRAGMA_HASH_H
#define PRAGMA_HASH_H

#include <stddef.h>
#include <stdint.h>

struct pragma_sha256 {
	uint32_t h[8];
	uint64_t total;
	unsigned char block[64];
	size_t fill;
};

void pragma_sha256_init(struct pragma_sha256 *s);
void pragma_sha256_update(struct pragma_sha256 *s, const void *data, size_t len);
/* Also separates fields: hashes the length, then the bytes. */
void pragma_sha256_field(struct pragma_sha256 *s, const void *data, size_t len);
void pragma_sha256_final(struct pragma_sha256 *s, unsigned char out[32]);
/* 64 lowercase hex chars + NUL. */
void pragma_sha256_hex(struct pragma_sha256 *s, char out[65]);
void pragma_sha256_str(const void *data, size_t len, char out[65]);

/* Not cryptographic: detects corruption and accidental change, ~10 GB/s. */
uint64_t pragma_hash64(const void *data, size_t len, uint64_t seed);

#endif
