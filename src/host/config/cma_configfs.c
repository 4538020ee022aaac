/* SPDX-License-Identifier: MIT */
/* rdma_cm's configfs directory as a model with no I/O (cma_configfs.h). */
#include "host/config/cma_configfs.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "host/config/mode.h"

#define PORT 1 /* the one port of a uroce device */

/* What a node is. Group nodes are 8 * serial + the kind's offset (K_GROUP + 0 .. K_TOS). */
enum kind {
	K_ROOT,
	K_RDMA_CM,
	K_GROUP,
	K_PORTS,
	K_PORT,
	K_MODE,
	K_TOS,
};

struct loc {
	enum kind kind;
	const struct uroce_cfs_group *g; /* the group, for K_GROUP and below */
};

static uint64_t group_node(const struct uroce_cfs_group *g, enum kind k)
{
	return g->serial * 8 + (uint64_t)(k - K_GROUP);
}

static bool is_dir(enum kind k)
{
	switch (k) {
	case K_ROOT:
	case K_RDMA_CM:
	case K_GROUP:
	case K_PORTS:
	case K_PORT:
		return true;
	case K_MODE:
	case K_TOS:
		return false;
	}
	return false;
}

static int locate(const struct uroce_cfs *fs, uint64_t node, struct loc *l)
{
	uint64_t serial = node / 8, off = node % 8;

	l->g = NULL;
	if (node == UROCE_CFS_ROOT) {
		l->kind = K_ROOT;
		return 0;
	}
	if (node == UROCE_CFS_RDMA_CM) {
		l->kind = K_RDMA_CM;
		return 0;
	}
	if (serial == 0 || off > (uint64_t)(K_TOS - K_GROUP))
		return -ENOENT;
	for (int i = 0; i < fs->n_groups; i++) {
		if (fs->groups[i].serial == serial) {
			l->g = &fs->groups[i];
			l->kind = (enum kind)(K_GROUP + (int)off);
			return 0;
		}
	}
	return -ENOENT;
}

/* Child i of directory l: 1 with its name, node and kind; 0 when there is no child i. */
static int child(const struct uroce_cfs *fs, const struct loc *l, size_t i, const char **name,
		 uint64_t *node, enum kind *kind)
{
	static const char *const port_files[] = {"default_roce_mode", "default_roce_tos"};

	switch (l->kind) {
	case K_ROOT:
		if (i > 0)
			return 0;
		*name = "rdma_cm";
		*node = UROCE_CFS_RDMA_CM;
		*kind = K_RDMA_CM;
		return 1;
	case K_RDMA_CM:
		if (i >= (size_t)fs->n_groups)
			return 0;
		*name = fs->groups[i].name;
		*node = group_node(&fs->groups[i], K_GROUP);
		*kind = K_GROUP;
		return 1;
	case K_GROUP:
		if (i > 0)
			return 0;
		*name = "ports";
		*node = group_node(l->g, K_PORTS);
		*kind = K_PORTS;
		return 1;
	case K_PORTS:
		if (i > 0)
			return 0;
		*name = "1";
		*node = group_node(l->g, K_PORT);
		*kind = K_PORT;
		return 1;
	case K_PORT:
		if (i > 1)
			return 0;
		*name = port_files[i];
		*kind = i == 0 ? K_MODE : K_TOS;
		*node = group_node(l->g, *kind);
		return 1;
	case K_MODE:
	case K_TOS:
		return 0;
	}
	return 0;
}

static void fill_attr(const struct uroce_cfs *fs, uint64_t node, enum kind k,
		      struct uroce_cfs_attr *out)
{
	memset(out, 0, sizeof(*out));
	out->node = node;
	out->dir = is_dir(k);
	out->perm = out->dir ? 0755 : 0644;
	out->size = out->dir ? 0 : UROCE_CFS_FILE_SIZE;
	switch (k) {
	case K_ROOT:
	case K_GROUP:
	case K_PORTS:
		out->nlink = 3;
		break;
	case K_RDMA_CM:
		out->nlink = 2 + (unsigned)fs->n_groups;
		break;
	case K_PORT:
		out->nlink = 2;
		break;
	case K_MODE:
	case K_TOS:
		out->nlink = 1;
		break;
	}
}

void uroce_cfs_init(struct uroce_cfs *fs, const struct uroce_cfs_ops *ops, void *arg)
{
	memset(fs, 0, sizeof(*fs));
	fs->ops = ops;
	fs->arg = arg;
	fs->next_serial = 1;
}

int uroce_cfs_getattr(const struct uroce_cfs *fs, uint64_t node, struct uroce_cfs_attr *out)
{
	struct loc l;
	int err = locate(fs, node, &l);

	if (err)
		return err;
	fill_attr(fs, node, l.kind, out);
	return 0;
}

/* The directory parent, located: 0, -ENOENT or -ENOTDIR. */
static int locate_dir(const struct uroce_cfs *fs, uint64_t parent, struct loc *l)
{
	int err = locate(fs, parent, l);

	if (err)
		return err;
	return is_dir(l->kind) ? 0 : -ENOTDIR;
}

/* Find name among dir's children: 0 with its node and kind, or -ENOENT. */
static int find(const struct uroce_cfs *fs, const struct loc *dir, const char *name,
		uint64_t *node, enum kind *kind)
{
	const char *n;

	for (size_t i = 0; child(fs, dir, i, &n, node, kind) == 1; i++)
		if (!strcmp(n, name))
			return 0;
	return -ENOENT;
}

int uroce_cfs_lookup(const struct uroce_cfs *fs, uint64_t parent, const char *name,
		     struct uroce_cfs_attr *out)
{
	struct loc l;
	uint64_t node;
	enum kind k;
	int err = locate_dir(fs, parent, &l);

	if (!err)
		err = find(fs, &l, name, &node, &k);
	if (err)
		return err;
	fill_attr(fs, node, k, out);
	return 0;
}

/* The node of dir's "..": the root is its own parent (the mount point's is not ours). */
static uint64_t parent_of(const struct loc *l)
{
	switch (l->kind) {
	case K_ROOT:
	case K_RDMA_CM:
		return UROCE_CFS_ROOT;
	case K_GROUP:
		return UROCE_CFS_RDMA_CM;
	case K_PORTS:
		return group_node(l->g, K_GROUP);
	case K_PORT:
	case K_MODE:
	case K_TOS:
		return group_node(l->g, K_PORTS);
	}
	return UROCE_CFS_ROOT;
}

int uroce_cfs_readdir(const struct uroce_cfs *fs, uint64_t node, size_t index,
		      struct uroce_cfs_dirent *out)
{
	struct loc l;
	const char *name;
	enum kind k;
	int err = locate_dir(fs, node, &l);

	if (err)
		return err;
	memset(out, 0, sizeof(*out));
	out->dir = true;
	if (index < 2) {
		snprintf(out->name, sizeof(out->name), "%s", index ? ".." : ".");
		out->node = index ? parent_of(&l) : node;
		return 1;
	}
	if (child(fs, &l, index - 2, &name, &out->node, &k) != 1)
		return 0;
	snprintf(out->name, sizeof(out->name), "%s", name);
	out->dir = is_dir(k);
	return 1;
}

int uroce_cfs_mkdir(struct uroce_cfs *fs, uint64_t parent, const char *name,
		    struct uroce_cfs_attr *out)
{
	struct uroce_cfs_group *g;
	struct loc l;
	uint64_t node;
	enum kind k;
	int err = locate_dir(fs, parent, &l);

	if (err)
		return err;
	/* The VFS finds an existing entry before configfs_mkdir runs. */
	if (!find(fs, &l, name, &node, &k))
		return -EEXIST;
	if (l.kind != K_RDMA_CM)
		return -EPERM; /* configfs_mkdir: the group's type has no make_group */
	if (strlen(name) > UROCE_CFS_NAME_MAX)
		return -ENODEV; /* longer than any device's name: make_cma_dev finds none */
	err = fs->ops->dev_check(fs->arg, name);
	if (err)
		return err;
	if (fs->n_groups == UROCE_CFS_GROUPS_MAX)
		return -ENOSPC;
	g = &fs->groups[fs->n_groups++];
	snprintf(g->name, sizeof(g->name), "%s", name);
	g->serial = fs->next_serial++;
	fill_attr(fs, group_node(g, K_GROUP), K_GROUP, out);
	return 0;
}

int uroce_cfs_rmdir(struct uroce_cfs *fs, uint64_t parent, const char *name)
{
	struct loc l, c;
	uint64_t node;
	enum kind k;
	int err = locate_dir(fs, parent, &l);

	if (!err)
		err = find(fs, &l, name, &node, &k);
	if (err)
		return err;
	switch (k) {
	case K_MODE:
	case K_TOS:
		return -ENOTDIR;
	case K_ROOT:
	case K_RDMA_CM: /* a subsystem: its parent is the configfs root */
	case K_PORTS:	/* default groups (CONFIGFS_USET_DEFAULT) */
	case K_PORT:
		return -EPERM;
	case K_GROUP:
		break;
	}
	/* The group's settings stay: the kernel keeps them in its cma_device, not in the group. */
	if (locate(fs, node, &c))
		return -ENOENT;
	size_t i = (size_t)(c.g - fs->groups);

	memmove(&fs->groups[i], &fs->groups[i + 1],
		(size_t)(fs->n_groups - 1 - (int)i) * sizeof(fs->groups[0]));
	fs->n_groups--;
	return 0;
}

int uroce_cfs_create(const struct uroce_cfs *fs, uint64_t parent, const char *name)
{
	struct loc l;
	uint64_t node;
	enum kind k;
	int err = locate_dir(fs, parent, &l);

	if (err)
		return err;
	if (!find(fs, &l, name, &node, &k))
		return -EEXIST;
	return -EACCES; /* the VFS's answer for a directory without ->create */
}

int uroce_cfs_unlink(const struct uroce_cfs *fs, uint64_t parent, const char *name)
{
	struct loc l;
	uint64_t node;
	enum kind k;
	int err = locate_dir(fs, parent, &l);

	if (!err)
		err = find(fs, &l, name, &node, &k);
	if (err)
		return err;
	return is_dir(k) ? -EISDIR : -EPERM; /* configfs_unlink removes only symbolic links */
}

int uroce_cfs_refuse(const struct uroce_cfs *fs, uint64_t parent)
{
	struct loc l;
	int err = locate_dir(fs, parent, &l);

	return err ? err : -EPERM;
}

/* The attribute file node: 0 with *l, -ENOENT or -EISDIR. */
static int locate_file(const struct uroce_cfs *fs, uint64_t node, struct loc *l)
{
	int err = locate(fs, node, l);

	if (err)
		return err;
	return is_dir(l->kind) ? -EISDIR : 0;
}

int uroce_cfs_open(const struct uroce_cfs *fs, uint64_t node)
{
	struct loc l;

	return locate_file(fs, node, &l);
}

ssize_t uroce_cfs_show(const struct uroce_cfs *fs, uint64_t node, char *buf, size_t cap)
{
	struct loc l;
	int err = locate_file(fs, node, &l), v = 0, n;

	if (err)
		return err;
	if (cap < UROCE_CFS_SHOW_MAX)
		return -ENOSPC;
	if (l.kind == K_MODE) {
		const char *s;

		err = fs->ops->mode_get(fs->arg, l.g->name, PORT, &v);
		if (err)
			return err;
		s = uroce_mode_str(v);
		if (!s)
			return -EINVAL; /* the op broke its contract */
		n = snprintf(buf, cap, "%s\n", s);
	} else {
		err = fs->ops->tos_get(fs->arg, l.g->name, PORT, &v);
		if (err)
			return err;
		n = snprintf(buf, cap, "%u\n", (unsigned)(v & 0xff));
	}
	return n;
}

/* A digit's value, or 16 for a character that is none. */
static unsigned digit(char c)
{
	if (c >= '0' && c <= '9')
		return (unsigned)(c - '0');
	if (c >= 'a' && c <= 'f')
		return (unsigned)(c - 'a' + 10);
	if (c >= 'A' && c <= 'F')
		return (unsigned)(c - 'A' + 10);
	return 16;
}

int uroce_cfs_parse_u8(const char *s, unsigned *v)
{
	unsigned base = 10, d;
	uint64_t acc = 0;
	size_t digits = 0;
	bool overflow = false;

	if (*s == '+')
		s++;
	/* _parse_integer_fixup_radix: "0x" and a hex digit is hex, another leading 0 octal. */
	if (s[0] == '0') {
		if ((s[1] == 'x' || s[1] == 'X') && digit(s[2]) < 16) {
			base = 16;
			s += 2;
		} else {
			base = 8;
		}
	}
	for (; (d = digit(*s)) < base; s++, digits++) {
		if (acc > (UINT64_MAX - d) / base)
			overflow = true;
		else
			acc = acc * base + d;
	}
	if (!digits)
		return -EINVAL;
	if (overflow)
		return -ERANGE;
	if (*s == '\n')
		s++;
	if (*s)
		return -EINVAL;
	if (acc > 255)
		return -ERANGE;
	*v = (unsigned)acc;
	return 0;
}

ssize_t uroce_cfs_store(const struct uroce_cfs *fs, uint64_t node, const char *data, size_t len)
{
	char text[UROCE_CFS_STORE_MAX + 1];
	struct loc l;
	unsigned tos;
	size_t n;
	int err = locate_file(fs, node, &l), v;

	if (err)
		return err;
	/* configfs hands the store a NUL-terminated copy of at most a page less one byte. */
	if (len > UROCE_CFS_STORE_MAX)
		len = UROCE_CFS_STORE_MAX;
	memcpy(text, data, len);
	text[len] = '\0';
	n = strlen(text);
	if (l.kind == K_MODE) {
		v = uroce_mode_parse(text, n);
		if (!v)
			return -EINVAL;
		err = fs->ops->mode_set(fs->arg, l.g->name, PORT, v);
	} else {
		err = uroce_cfs_parse_u8(text, &tos);
		if (!err)
			err = fs->ops->tos_set(fs->arg, l.g->name, PORT, (int)tos);
	}
	return err ? err : (ssize_t)n;
}

int uroce_cfs_truncate(const struct uroce_cfs *fs, uint64_t node, uint64_t size)
{
	struct loc l;

	(void)size;
	return locate_file(fs, node, &l);
}
