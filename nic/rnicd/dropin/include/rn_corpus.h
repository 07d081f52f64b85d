/* SPDX-License-Identifier: BSD-2-Clause */
/* The fuzzers' seed corpus: every file of a directory (the golden bodies
 * of nic/rnicd/proto/testdata/golden, written by the Go encoder), so each
 * fuzzer starts from what the daemon really sends besides its own seeds. */
#ifndef RN_CORPUS_H
#define RN_CORPUS_H

#include <dirent.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { RN_CORPUS_MAX = 128, RN_CORPUS_FILE = 4096 };

struct rn_corpus {
	uint8_t *b[RN_CORPUS_MAX];
	size_t n[RN_CORPUS_MAX];
	int len;
};

/* rn_corpus_load adds the files of dir, each cut to RN_CORPUS_FILE
 * bytes; it returns how many, or -1 if dir cannot be read. */
static inline int rn_corpus_load(struct rn_corpus *c, const char *dir)
{
	char path[4096];
	struct dirent *e;
	DIR *d = opendir(dir);
	if (!d)
		return -1;
	while ((e = readdir(d)) && c->len < RN_CORPUS_MAX) {
		FILE *f;
		if (e->d_name[0] == '.')
			continue;
		snprintf(path, sizeof(path), "%s/%s", dir, e->d_name);
		if (!(f = fopen(path, "rb")))
			continue;
		c->b[c->len] = malloc(RN_CORPUS_FILE);
		c->n[c->len] = fread(c->b[c->len], 1, RN_CORPUS_FILE, f);
		fclose(f);
		c->len++;
	}
	closedir(d);
	return c->len;
}

static inline void rn_corpus_free(struct rn_corpus *c)
{
	for (int i = 0; i < c->len; i++)
		free(c->b[i]);
	c->len = 0;
}

#endif
