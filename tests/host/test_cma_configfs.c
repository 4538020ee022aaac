/* SPDX-License-Identifier: MIT */
/*
 * The rdma_cm configfs model (host/config/cma_configfs.h) over fake settings: the tree mkdir
 * makes, lookups and listings, the kernel's errors for every refused call, what reads show and
 * what writes take (the kernel's parsers: ib_cache_gid_parse_type_str, kstrtou8), and settings
 * that outlive rmdir. No I/O: the ops below keep the settings in memory.
 */
#include <errno.h>
#include <string.h>

#include "check.h"
#include "host/config/cma_configfs.h"

/* Two devices: "d12" supports RoCE v1 and v2, "d1" only v1. */
struct fake {
	int mode[2], tos[2];
	int sets;	   /* calls of mode_set and tos_set */
	bool d12_gone;	   /* d12 deleted after mkdir: every op says -ENODEV */
};

static int dev_index(struct fake *f, const char *dev)
{
	if (!strcmp(dev, "d12"))
		return f->d12_gone ? -ENODEV : 0;
	if (!strcmp(dev, "d1"))
		return 1;
	return -ENODEV;
}

static int f_check(void *arg, const char *dev)
{
	int i = dev_index(arg, dev);

	return i < 0 ? i : 0;
}

static int f_mode_get(void *arg, const char *dev, int port, int *v)
{
	struct fake *f = arg;
	int i = dev_index(f, dev);

	if (i < 0)
		return i;
	CHECK_EQ(port, 1);
	*v = f->mode[i];
	return 0;
}

static int f_mode_set(void *arg, const char *dev, int port, int v)
{
	struct fake *f = arg;
	int i = dev_index(f, dev);

	f->sets++;
	if (i < 0)
		return i;
	CHECK_EQ(port, 1);
	if (i == 1 && v != 1)
		return -EINVAL; /* v1-only, as uroce_mode_set */
	f->mode[i] = v;
	return 0;
}

static int f_tos_get(void *arg, const char *dev, int port, int *t)
{
	struct fake *f = arg;
	int i = dev_index(f, dev);

	if (i < 0)
		return i;
	CHECK_EQ(port, 1);
	*t = f->tos[i];
	return 0;
}

static int f_tos_set(void *arg, const char *dev, int port, int t)
{
	struct fake *f = arg;
	int i = dev_index(f, dev);

	f->sets++;
	if (i < 0)
		return i;
	CHECK_EQ(port, 1);
	f->tos[i] = t;
	return 0;
}

static const struct uroce_cfs_ops fake_ops = {
	.dev_check = f_check,
	.mode_get = f_mode_get,
	.mode_set = f_mode_set,
	.tos_get = f_tos_get,
	.tos_set = f_tos_set,
};

/* Walk a path of names from the root: the node, or 0 when a lookup fails. */
static uint64_t walk(const struct uroce_cfs *fs, const char *const *names, size_t n)
{
	struct uroce_cfs_attr a = {.node = UROCE_CFS_ROOT};

	for (size_t i = 0; i < n; i++)
		if (uroce_cfs_lookup(fs, a.node, names[i], &a))
			return 0;
	return a.node;
}

#define WALK(fs, ...)                                                                             \
	walk(fs, (const char *const[]){__VA_ARGS__},                                              \
	     sizeof((const char *const[]){__VA_ARGS__}) / sizeof(const char *))

/* The show text of node as a string ("" on error, with *err set). */
static const char *show(const struct uroce_cfs *fs, uint64_t node, ssize_t *err)
{
	static char buf[UROCE_CFS_SHOW_MAX + 1];
	ssize_t n = uroce_cfs_show(fs, node, buf, UROCE_CFS_SHOW_MAX);

	*err = n < 0 ? n : 0;
	buf[n < 0 ? 0 : n] = '\0';
	return buf;
}

static ssize_t store(const struct uroce_cfs *fs, uint64_t node, const char *s)
{
	return uroce_cfs_store(fs, node, s, strlen(s));
}

static void test_tree(void)
{
	struct fake f = {.mode = {2, 1}};
	struct uroce_cfs fs;
	struct uroce_cfs_attr a;
	struct uroce_cfs_dirent de;
	uint64_t g, ports, port, mode, tos;

	uroce_cfs_init(&fs, &fake_ops, &f);
	CHECK_EQ(uroce_cfs_getattr(&fs, UROCE_CFS_ROOT, &a), 0);
	CHECK(a.dir && a.perm == 0755 && a.nlink == 3);
	CHECK_EQ(uroce_cfs_lookup(&fs, UROCE_CFS_ROOT, "rdma_cm", &a), 0);
	CHECK_EQ(a.node, UROCE_CFS_RDMA_CM);
	CHECK(a.dir && a.nlink == 2);
	CHECK_EQ(uroce_cfs_lookup(&fs, UROCE_CFS_RDMA_CM, "d12", &a), -ENOENT);
	/* the root lists ".", "..", rdma_cm; rdma_cm lists only "." and ".." */
	CHECK_EQ(uroce_cfs_readdir(&fs, UROCE_CFS_ROOT, 0, &de), 1);
	CHECK(!strcmp(de.name, ".") && de.node == UROCE_CFS_ROOT && de.dir);
	CHECK_EQ(uroce_cfs_readdir(&fs, UROCE_CFS_ROOT, 1, &de), 1);
	CHECK(!strcmp(de.name, ".."));
	CHECK_EQ(uroce_cfs_readdir(&fs, UROCE_CFS_ROOT, 2, &de), 1);
	CHECK(!strcmp(de.name, "rdma_cm") && de.node == UROCE_CFS_RDMA_CM && de.dir);
	CHECK_EQ(uroce_cfs_readdir(&fs, UROCE_CFS_ROOT, 3, &de), 0);
	CHECK_EQ(uroce_cfs_readdir(&fs, UROCE_CFS_RDMA_CM, 2, &de), 0);

	/* mkdir makes the group with ports/1 and its two files */
	CHECK_EQ(uroce_cfs_mkdir(&fs, UROCE_CFS_RDMA_CM, "d12", &a), 0);
	g = a.node;
	CHECK(a.dir && a.perm == 0755 && a.nlink == 3);
	CHECK_EQ(uroce_cfs_getattr(&fs, UROCE_CFS_RDMA_CM, &a), 0);
	CHECK_EQ(a.nlink, 3u);
	CHECK_EQ(WALK(&fs, "rdma_cm", "d12"), g);
	ports = WALK(&fs, "rdma_cm", "d12", "ports");
	port = WALK(&fs, "rdma_cm", "d12", "ports", "1");
	mode = WALK(&fs, "rdma_cm", "d12", "ports", "1", "default_roce_mode");
	tos = WALK(&fs, "rdma_cm", "d12", "ports", "1", "default_roce_tos");
	CHECK(ports && port && mode && tos);
	CHECK(ports != g && port != ports && mode != port && tos != mode);
	CHECK_EQ(WALK(&fs, "rdma_cm", "d12", "ports", "2"), 0u);
	CHECK_EQ(uroce_cfs_getattr(&fs, mode, &a), 0);
	CHECK(!a.dir && a.perm == 0644 && a.nlink == 1 && a.size == UROCE_CFS_FILE_SIZE);
	CHECK_EQ(uroce_cfs_getattr(&fs, port, &a), 0);
	CHECK(a.dir && a.nlink == 2);
	CHECK_EQ(uroce_cfs_readdir(&fs, UROCE_CFS_RDMA_CM, 2, &de), 1);
	CHECK(!strcmp(de.name, "d12") && de.node == g && de.dir);
	CHECK_EQ(uroce_cfs_readdir(&fs, g, 1, &de), 1);
	CHECK_EQ(de.node, UROCE_CFS_RDMA_CM);
	CHECK_EQ(uroce_cfs_readdir(&fs, g, 2, &de), 1);
	CHECK(!strcmp(de.name, "ports") && de.node == ports);
	CHECK_EQ(uroce_cfs_readdir(&fs, ports, 2, &de), 1);
	CHECK(!strcmp(de.name, "1") && de.node == port);
	CHECK_EQ(uroce_cfs_readdir(&fs, port, 1, &de), 1);
	CHECK_EQ(de.node, ports);
	CHECK_EQ(uroce_cfs_readdir(&fs, port, 2, &de), 1);
	CHECK(!strcmp(de.name, "default_roce_mode") && de.node == mode && !de.dir);
	CHECK_EQ(uroce_cfs_readdir(&fs, port, 3, &de), 1);
	CHECK(!strcmp(de.name, "default_roce_tos") && de.node == tos && !de.dir);
	CHECK_EQ(uroce_cfs_readdir(&fs, port, 4, &de), 0);
	CHECK_EQ(uroce_cfs_readdir(&fs, mode, 0, &de), -ENOTDIR);
	CHECK_EQ(uroce_cfs_lookup(&fs, mode, "x", &a), -ENOTDIR);

	/* a second group lists after the first */
	CHECK_EQ(uroce_cfs_mkdir(&fs, UROCE_CFS_RDMA_CM, "d1", &a), 0);
	CHECK_EQ(uroce_cfs_readdir(&fs, UROCE_CFS_RDMA_CM, 3, &de), 1);
	CHECK(!strcmp(de.name, "d1") && de.node == a.node);
	CHECK_EQ(uroce_cfs_readdir(&fs, UROCE_CFS_RDMA_CM, 4, &de), 0);

	/* rmdir: the group's nodes are gone and never come back under a new mkdir */
	CHECK_EQ(uroce_cfs_rmdir(&fs, UROCE_CFS_RDMA_CM, "d12"), 0);
	CHECK_EQ(uroce_cfs_getattr(&fs, g, &a), -ENOENT);
	CHECK_EQ(uroce_cfs_getattr(&fs, mode, &a), -ENOENT);
	CHECK_EQ(uroce_cfs_open(&fs, mode), -ENOENT);
	CHECK_EQ(uroce_cfs_lookup(&fs, UROCE_CFS_RDMA_CM, "d12", &a), -ENOENT);
	CHECK_EQ(uroce_cfs_readdir(&fs, UROCE_CFS_RDMA_CM, 2, &de), 1);
	CHECK(!strcmp(de.name, "d1"));
	CHECK_EQ(uroce_cfs_mkdir(&fs, UROCE_CFS_RDMA_CM, "d12", &a), 0);
	CHECK(a.node != g);
	CHECK_EQ(uroce_cfs_getattr(&fs, mode, &a), -ENOENT);
	CHECK(WALK(&fs, "rdma_cm", "d12", "ports", "1", "default_roce_mode") != mode);
	CHECK_EQ(uroce_cfs_getattr(&fs, 0, &a), -ENOENT);
	CHECK_EQ(uroce_cfs_getattr(&fs, 3, &a), -ENOENT);
	CHECK_EQ(uroce_cfs_getattr(&fs, 8 * 1000, &a), -ENOENT);
	CHECK_EQ(f.sets, 0);
}

/* Every call configfs refuses, with the kernel's error. */
static void test_refusals(void)
{
	struct fake f = {.mode = {2, 1}};
	struct uroce_cfs fs;
	struct uroce_cfs_attr a;
	uint64_t g, ports, port, mode;
	char long_name[UROCE_CFS_NAME_MAX + 2];

	uroce_cfs_init(&fs, &fake_ops, &f);
	CHECK_EQ(uroce_cfs_mkdir(&fs, UROCE_CFS_RDMA_CM, "nosuch", &a), -ENODEV);
	memset(long_name, 'd', sizeof(long_name) - 1);
	long_name[sizeof(long_name) - 1] = '\0';
	CHECK_EQ(uroce_cfs_mkdir(&fs, UROCE_CFS_RDMA_CM, long_name, &a), -ENODEV);
	CHECK_EQ(uroce_cfs_mkdir(&fs, UROCE_CFS_ROOT, "d12", &a), -EPERM);
	CHECK_EQ(uroce_cfs_mkdir(&fs, UROCE_CFS_ROOT, "rdma_cm", &a), -EEXIST);
	CHECK_EQ(uroce_cfs_mkdir(&fs, UROCE_CFS_RDMA_CM, "d12", &a), 0);
	g = a.node;
	ports = WALK(&fs, "rdma_cm", "d12", "ports");
	port = WALK(&fs, "rdma_cm", "d12", "ports", "1");
	mode = WALK(&fs, "rdma_cm", "d12", "ports", "1", "default_roce_mode");
	CHECK_EQ(uroce_cfs_mkdir(&fs, UROCE_CFS_RDMA_CM, "d12", &a), -EEXIST);
	CHECK_EQ(uroce_cfs_mkdir(&fs, g, "x", &a), -EPERM);
	CHECK_EQ(uroce_cfs_mkdir(&fs, g, "ports", &a), -EEXIST);
	CHECK_EQ(uroce_cfs_mkdir(&fs, ports, "2", &a), -EPERM);
	CHECK_EQ(uroce_cfs_mkdir(&fs, port, "x", &a), -EPERM);
	CHECK_EQ(uroce_cfs_mkdir(&fs, mode, "x", &a), -ENOTDIR);
	CHECK_EQ(uroce_cfs_mkdir(&fs, 8 * 99, "x", &a), -ENOENT);

	CHECK_EQ(uroce_cfs_rmdir(&fs, UROCE_CFS_ROOT, "rdma_cm"), -EPERM);
	CHECK_EQ(uroce_cfs_rmdir(&fs, g, "ports"), -EPERM);
	CHECK_EQ(uroce_cfs_rmdir(&fs, ports, "1"), -EPERM);
	CHECK_EQ(uroce_cfs_rmdir(&fs, port, "default_roce_mode"), -ENOTDIR);
	CHECK_EQ(uroce_cfs_rmdir(&fs, port, "nosuch"), -ENOENT);
	CHECK_EQ(uroce_cfs_rmdir(&fs, UROCE_CFS_RDMA_CM, "d1"), -ENOENT);
	CHECK_EQ(uroce_cfs_rmdir(&fs, mode, "x"), -ENOTDIR);

	CHECK_EQ(uroce_cfs_create(&fs, port, "new"), -EACCES);
	CHECK_EQ(uroce_cfs_create(&fs, UROCE_CFS_RDMA_CM, "d1"), -EACCES);
	CHECK_EQ(uroce_cfs_create(&fs, port, "default_roce_mode"), -EEXIST);
	CHECK_EQ(uroce_cfs_create(&fs, mode, "x"), -ENOTDIR);
	CHECK_EQ(uroce_cfs_unlink(&fs, port, "default_roce_mode"), -EPERM);
	CHECK_EQ(uroce_cfs_unlink(&fs, UROCE_CFS_RDMA_CM, "d12"), -EISDIR);
	CHECK_EQ(uroce_cfs_unlink(&fs, port, "nosuch"), -ENOENT);
	CHECK_EQ(uroce_cfs_refuse(&fs, port), -EPERM);
	CHECK_EQ(uroce_cfs_refuse(&fs, mode), -ENOTDIR);
	CHECK_EQ(uroce_cfs_refuse(&fs, 8 * 99), -ENOENT);

	CHECK_EQ(uroce_cfs_open(&fs, mode), 0);
	CHECK_EQ(uroce_cfs_open(&fs, port), -EISDIR);
	CHECK_EQ(uroce_cfs_truncate(&fs, mode, 0), 0);
	CHECK_EQ(uroce_cfs_truncate(&fs, port, 0), -EISDIR);
	CHECK_EQ(uroce_cfs_store(&fs, port, "1", 1), -EISDIR);
	char buf[UROCE_CFS_SHOW_MAX];

	CHECK_EQ(uroce_cfs_show(&fs, g, buf, sizeof(buf)), -EISDIR);
	CHECK_EQ(uroce_cfs_show(&fs, mode, buf, 8), -ENOSPC);
	CHECK_EQ(f.sets, 0);
	CHECK_EQ(f.mode[0], 2);
}

static void test_mode(void)
{
	struct fake f = {.mode = {2, 1}};
	struct uroce_cfs fs;
	struct uroce_cfs_attr a;
	uint64_t m12, m1;
	ssize_t err;

	uroce_cfs_init(&fs, &fake_ops, &f);
	CHECK_EQ(uroce_cfs_mkdir(&fs, UROCE_CFS_RDMA_CM, "d12", &a), 0);
	CHECK_EQ(uroce_cfs_mkdir(&fs, UROCE_CFS_RDMA_CM, "d1", &a), 0);
	m12 = WALK(&fs, "rdma_cm", "d12", "ports", "1", "default_roce_mode");
	m1 = WALK(&fs, "rdma_cm", "d1", "ports", "1", "default_roce_mode");
	CHECK(!strcmp(show(&fs, m12, &err), "RoCE v2\n") && err == 0);
	CHECK(!strcmp(show(&fs, m1, &err), "IB/RoCE v1\n") && err == 0);

	/* with and without the newline; the store consumes every byte */
	CHECK_EQ(store(&fs, m12, "IB/RoCE v1\n"), 11);
	CHECK_EQ(f.mode[0], 1);
	CHECK(!strcmp(show(&fs, m12, &err), "IB/RoCE v1\n"));
	CHECK_EQ(store(&fs, m12, "RoCE v2"), 7);
	CHECK_EQ(f.mode[0], 2);

	/* anything else is -EINVAL and sets nothing */
	static const char *const bad[] = {
		"", "\n", "RoCE v2\n\n", "RoCE v1", "roce v2", " RoCE v2", "RoCE v2 ", "RoCE",
		"IB/RoCE v1\r\n", "RoCE v22", "2", "IB", "RoCE v2\nx",
	};
	int sets = f.sets;

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		CHECKF(store(&fs, m12, bad[i]) == -EINVAL, "store '%s'", bad[i]);
	CHECK_EQ(f.sets, sets);
	CHECK_EQ(f.mode[0], 2);

	/* the text ends at a NUL: the store takes what is before it and says so */
	CHECK_EQ(uroce_cfs_store(&fs, m12, "IB/RoCE v1\0junk", 15), 10);
	CHECK_EQ(f.mode[0], 1);
	CHECK_EQ(uroce_cfs_store(&fs, m12, "\0RoCE v2", 8), -EINVAL);
	/* more than a page is cut to 4095 bytes, which then do not parse */
	static char big[5000];

	memset(big, 'x', sizeof(big));
	memcpy(big, "RoCE v2", 7);
	CHECK_EQ(uroce_cfs_store(&fs, m12, big, sizeof(big)), -EINVAL);
	CHECK_EQ(f.mode[0], 1);

	/* a mode the device does not support: the set op's -EINVAL */
	CHECK_EQ(store(&fs, m1, "RoCE v2\n"), -EINVAL);
	CHECK_EQ(f.mode[1], 1);
	CHECK_EQ(store(&fs, m1, "IB/RoCE v1\n"), 11);

	/* the setting outlives rmdir: a new group shows it */
	CHECK_EQ(uroce_cfs_rmdir(&fs, UROCE_CFS_RDMA_CM, "d12"), 0);
	CHECK_EQ(f.mode[0], 1);
	CHECK_EQ(uroce_cfs_mkdir(&fs, UROCE_CFS_RDMA_CM, "d12", &a), 0);
	m12 = WALK(&fs, "rdma_cm", "d12", "ports", "1", "default_roce_mode");
	CHECK(!strcmp(show(&fs, m12, &err), "IB/RoCE v1\n"));

	/* a device deleted after mkdir: reads and writes fail with -ENODEV */
	f.d12_gone = true;
	CHECK(!strcmp(show(&fs, m12, &err), "") && err == -ENODEV);
	CHECK_EQ(store(&fs, m12, "RoCE v2\n"), -ENODEV);
	/* ... after the text is checked, as the kernel parses before it finds the device */
	CHECK_EQ(store(&fs, m12, "v9\n"), -EINVAL);
	CHECK_EQ(uroce_cfs_rmdir(&fs, UROCE_CFS_RDMA_CM, "d12"), 0);
}

static void test_tos(void)
{
	struct fake f = {.mode = {2, 1}};
	struct uroce_cfs fs;
	struct uroce_cfs_attr a;
	uint64_t t;
	ssize_t err;

	uroce_cfs_init(&fs, &fake_ops, &f);
	CHECK_EQ(uroce_cfs_mkdir(&fs, UROCE_CFS_RDMA_CM, "d12", &a), 0);
	t = WALK(&fs, "rdma_cm", "d12", "ports", "1", "default_roce_tos");
	CHECK(!strcmp(show(&fs, t, &err), "0\n") && err == 0);
	static const struct {
		const char *in;
		int want; /* the value, or a negative errno */
	} cases[] = {
		{"96\n", 96}, {"0", 0}, {"255", 255}, {"+7", 7}, {"0x1f\n", 31}, {"0XfF", 255},
		{"017", 15}, {"0", 0}, {"00", 0}, {"256", -ERANGE}, {"0x100", -ERANGE},
		{"99999999999999999999999", -ERANGE}, {"", -EINVAL}, {"\n", -EINVAL},
		{"-1", -EINVAL}, {" 1", -EINVAL}, {"1 ", -EINVAL}, {"1\n\n", -EINVAL},
		{"08", -EINVAL}, {"0x", -EINVAL}, {"0xg", -EINVAL}, {"x1", -EINVAL},
		{"++1", -EINVAL}, {"12a", -EINVAL},
	};

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		unsigned v = 1000;
		int rc = uroce_cfs_parse_u8(cases[i].in, &v);

		if (cases[i].want >= 0) {
			CHECKF(rc == 0 && v == (unsigned)cases[i].want, "parse '%s': %d, %u",
			       cases[i].in, rc, v);
			CHECKF(store(&fs, t, cases[i].in) == (ssize_t)strlen(cases[i].in),
			       "store '%s'", cases[i].in);
			CHECK_EQ(f.tos[0], cases[i].want);
		} else {
			CHECKF(rc == cases[i].want && v == 1000, "parse '%s': %d", cases[i].in, rc);
			f.tos[0] = 42;
			CHECKF(store(&fs, t, cases[i].in) == cases[i].want, "store '%s'",
			       cases[i].in);
			CHECK_EQ(f.tos[0], 42);
		}
	}
	CHECK_EQ(store(&fs, t, "0x60\n"), 5);
	CHECK(!strcmp(show(&fs, t, &err), "96\n"));
	/* the other device's setting is its own */
	CHECK_EQ(uroce_cfs_mkdir(&fs, UROCE_CFS_RDMA_CM, "d1", &a), 0);
	CHECK(!strcmp(show(&fs, WALK(&fs, "rdma_cm", "d1", "ports", "1", "default_roce_tos"),
			    &err), "0\n"));
}

static void test_many_groups(void)
{
	struct fake f = {.mode = {2, 1}};
	struct uroce_cfs fs;
	struct uroce_cfs_attr a;

	/* mkdir and rmdir over and over: the table does not fill up */
	uroce_cfs_init(&fs, &fake_ops, &f);
	for (int i = 0; i < 3 * UROCE_CFS_GROUPS_MAX; i++) {
		CHECK_EQ(uroce_cfs_mkdir(&fs, UROCE_CFS_RDMA_CM, "d12", &a), 0);
		CHECK_EQ(uroce_cfs_rmdir(&fs, UROCE_CFS_RDMA_CM, "d12"), 0);
	}
	CHECK_EQ(fs.n_groups, 0);
	/* a full table refuses with -ENOSPC (devices here are named d12 and d1 only) */
	fs.n_groups = UROCE_CFS_GROUPS_MAX;
	for (int i = 0; i < UROCE_CFS_GROUPS_MAX; i++) {
		snprintf(fs.groups[i].name, sizeof(fs.groups[i].name), "g%d", i);
		fs.groups[i].serial = fs.next_serial++;
	}
	CHECK_EQ(uroce_cfs_mkdir(&fs, UROCE_CFS_RDMA_CM, "d12", &a), -ENOSPC);
	CHECK_EQ(uroce_cfs_rmdir(&fs, UROCE_CFS_RDMA_CM, "g0"), 0);
	CHECK_EQ(uroce_cfs_mkdir(&fs, UROCE_CFS_RDMA_CM, "d12", &a), 0);
}

int main(void)
{
	test_tree();
	test_refusals();
	test_mode();
	test_tos();
	test_many_groups();
	return check_exit("test_cma_configfs");
}
