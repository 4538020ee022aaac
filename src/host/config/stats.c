/* SPDX-License-Identifier: MIT */
/* Shared counter files: creation, mapping, atomic adds, reading (format in stats.h). */
#include "host/config/stats.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "host/config/cm_counters.h"
#include "host/config/io_counters.h"
#include "host/config/device.h"
#include "host/config/rundir.h"

#define HDR_SIZE 64u

/* The engine's counters, then the I/O backends' (index UROCE_CNT_MAX + k for I/O counter k),
 * then the CM's (from CM_BASE). */
#define CM_BASE	  (UROCE_CNT_MAX + UROCE_IO_CNT_MAX)
#define NCOUNTERS (CM_BASE + UROCE_CM_CNT_MAX)

#define STATS_NAME(id, name) name,
static const char *const counter_names[NCOUNTERS] = { UROCE_COUNTERS(STATS_NAME)
							      UROCE_IO_COUNTERS(STATS_NAME)
								      UROCE_CM_COUNTERS(STATS_NAME) };
#undef STATS_NAME
#define STATS_NAME_FITS(id, name) _Static_assert(sizeof(name) <= UROCE_STATS_NAME_SIZE, name);
UROCE_COUNTERS(STATS_NAME_FITS)
UROCE_IO_COUNTERS(STATS_NAME_FITS)
UROCE_CM_COUNTERS(STATS_NAME_FITS)
#undef STATS_NAME_FITS

struct uroce_stats {
	void *map;
	size_t len;
	uint64_t *slot[NCOUNTERS]; /* NULL: the file has no such counter */
};

struct layout {
	uint32_t count, names_off, values_off;
	size_t size;
};

static uint32_t get_u32(const uint8_t *p)
{
	uint32_t v;

	memcpy(&v, p, 4);
	return v;
}

static void put_u32(uint8_t *p, uint32_t v)
{
	memcpy(p, &v, 4);
}

static uint32_t values_off_for(uint32_t count)
{
	return (HDR_SIZE + count * UROCE_STATS_NAME_SIZE + 63u) & ~63u;
}

/* Check a mapped file's header and size. 0, -EPROTO or -EBADMSG. */
static int check_layout(const uint8_t *p, size_t size, struct layout *l)
{
	if (size < HDR_SIZE)
		return -EBADMSG;
	if (memcmp(p, UROCE_STATS_MAGIC, 8) != 0)
		return -EPROTO;
	if (get_u32(p + 8) != UROCE_STATS_VERSION || get_u32(p + 16) != UROCE_STATS_NAME_SIZE ||
	    get_u32(p + 20) != HDR_SIZE)
		return -EPROTO;
	l->count = get_u32(p + 12);
	l->names_off = HDR_SIZE;
	l->values_off = get_u32(p + 24);
	if (l->count > UROCE_STATS_MAX || l->values_off != values_off_for(l->count))
		return -EBADMSG;
	l->size = l->values_off + (size_t)l->count * 8;
	return size == l->size ? 0 : -EBADMSG;
}

int uroce_stats_path(const char *rundir, const char *dev, char *buf, size_t cap)
{
	return uroce_rundir_join(buf, cap, "%s/stats/%s", rundir, dev);
}

/* A complete zeroed file for this build's counters: malloc'd into *buf. */
static int make_file(uint8_t **buf, size_t *len)
{
	uint32_t count = NCOUNTERS, voff = values_off_for(count);
	size_t size = voff + (size_t)count * 8;
	uint8_t *p = calloc(1, size);

	if (!p)
		return -ENOMEM;
	memcpy(p, UROCE_STATS_MAGIC, 8);
	put_u32(p + 8, UROCE_STATS_VERSION);
	put_u32(p + 12, count);
	put_u32(p + 16, UROCE_STATS_NAME_SIZE);
	put_u32(p + 20, HDR_SIZE);
	put_u32(p + 24, voff);
	for (uint32_t i = 0; i < count; i++)
		memcpy(p + HDR_SIZE + i * UROCE_STATS_NAME_SIZE, counter_names[i],
		       strlen(counter_names[i]));
	*buf = p;
	*len = size;
	return 0;
}

/* Map path (read-only or read-write) and check it. */
static int map_file(const char *path, bool rw, void **map, size_t *len, struct layout *l)
{
	struct stat st;
	int fd, err;

	fd = open(path, (rw ? O_RDWR : O_RDONLY) | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	if (fstat(fd, &st) != 0) {
		err = -errno;
		close(fd);
		return err;
	}
	if (st.st_size < (off_t)HDR_SIZE || st.st_size > (off_t)(64u << 20)) {
		close(fd);
		return -EBADMSG;
	}
	*len = (size_t)st.st_size;
	*map = mmap(NULL, *len, rw ? PROT_READ | PROT_WRITE : PROT_READ, MAP_SHARED, fd, 0);
	err = *map == MAP_FAILED ? -errno : 0;
	close(fd);
	if (err)
		return err;
	err = check_layout(*map, *len, l);
	if (err)
		munmap(*map, *len);
	return err;
}

int uroce_stats_open(const char *rundir, const char *dev, struct uroce_stats **out)
{
	char path[PATH_MAX];
	struct uroce_stats *s;
	struct layout l;
	uint8_t *file;
	size_t flen;
	int err;

	if (uroce_dev_name_check(dev))
		return -EINVAL;
	err = uroce_stats_path(rundir, dev, path, sizeof(path));
	if (err)
		return err;
	err = make_file(&file, &flen);
	if (err)
		return err;
	err = uroce_rundir_write(path, file, flen, true);
	free(file);
	if (err && err != -EEXIST)
		return err;
	s = calloc(1, sizeof(*s));
	if (!s)
		return -ENOMEM;
	err = map_file(path, true, &s->map, &s->len, &l);
	if (err) {
		free(s);
		return err;
	}
	for (uint32_t i = 0; i < l.count; i++) {
		const char *name = (const char *)s->map + l.names_off + i * UROCE_STATS_NAME_SIZE;

		for (int c = 0; c < NCOUNTERS; c++) {
			if (!strncmp(name, counter_names[c], UROCE_STATS_NAME_SIZE) &&
			    !s->slot[c]) {
				s->slot[c] = (uint64_t *)(void *)((uint8_t *)s->map + l.values_off +
								  (size_t)i * 8);
				break;
			}
		}
	}
	*out = s;
	return 0;
}

/* Add n to the file's counter i (of NCOUNTERS), if the file has it. */
static void add_slot(struct uroce_stats *s, int i, uint64_t n)
{
	if (s->slot[i] && n)
		__atomic_fetch_add(s->slot[i], n, __ATOMIC_RELAXED);
}

void uroce_stats_add(struct uroce_stats *s, enum uroce_counter c, uint64_t n)
{
	if ((unsigned)c < UROCE_CNT_MAX)
		add_slot(s, (int)c, n);
}

void uroce_stats_add_all(struct uroce_stats *s, const uint64_t delta[UROCE_CNT_MAX])
{
	for (int c = 0; c < UROCE_CNT_MAX; c++)
		uroce_stats_add(s, (enum uroce_counter)c, delta[c]);
}

void uroce_stats_add_io(struct uroce_stats *s, const uint64_t delta[UROCE_IO_CNT_MAX])
{
	for (int k = 0; k < UROCE_IO_CNT_MAX; k++)
		add_slot(s, UROCE_CNT_MAX + k, delta[k]);
}

void uroce_stats_add_cm(struct uroce_stats *s, const uint64_t delta[UROCE_CM_CNT_MAX])
{
	for (int k = 0; k < UROCE_CM_CNT_MAX; k++)
		add_slot(s, CM_BASE + k, delta[k]);
}

void uroce_stats_close(struct uroce_stats *s)
{
	if (!s)
		return;
	munmap(s->map, s->len);
	free(s);
}

int uroce_stats_read(const char *rundir, const char *dev, struct uroce_stat **out, int *n)
{
	char path[PATH_MAX];
	struct uroce_stat *v;
	struct layout l;
	void *map;
	size_t len;
	int err;

	*out = NULL;
	*n = 0;
	if (uroce_dev_name_check(dev))
		return -EINVAL;
	err = uroce_stats_path(rundir, dev, path, sizeof(path));
	if (err)
		return err;
	err = map_file(path, false, &map, &len, &l);
	if (err)
		return err;
	v = calloc(l.count ? l.count : 1, sizeof(*v));
	if (!v) {
		munmap(map, len);
		return -ENOMEM;
	}
	for (uint32_t i = 0; i < l.count; i++) {
		const char *name = (const char *)map + l.names_off + i * UROCE_STATS_NAME_SIZE;
		const uint64_t *val =
			(const uint64_t *)(const void *)((const uint8_t *)map + l.values_off +
							 (size_t)i * 8);

		memcpy(v[i].name, name, UROCE_STATS_NAME_SIZE);
		v[i].name[UROCE_STATS_NAME_SIZE - 1] = '\0';
		v[i].value = __atomic_load_n(val, __ATOMIC_RELAXED);
	}
	munmap(map, len);
	*out = v;
	*n = (int)l.count;
	return 0;
}
