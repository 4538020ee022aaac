/* SPDX-License-Identifier: MIT */
/* Devices: the list, names and GUIDs, opening and closing a context, sysfs helpers. */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include "compat/compat.h"
#include "compat/rdma_core_driver.h"
#include "host/os/netif.h"
#include "host/config/rundir.h"

/* What +664 points at: an object that is neither libmlx5's nor libefa's device ops. */
static const struct {
	const char *name;
} uroce_verbs_device_ops = {"uroce"};

_Static_assert(sizeof(struct ibv_device) == 664, "rdma-core v44 struct ibv_device");
_Static_assert(offsetof(struct compat_device, ops) == 664, "verbs_device.ops at +664");
_Static_assert(offsetof(struct compat_device, refs) >= 712, "verbs_device is 712 bytes");

static void device_put(struct compat_device *d)
{
	if (atomic_fetch_sub(&d->refs, 1) == 1)
		free(d);
}

static struct compat_device *device_new(const struct uroce_devdef *def,
					const struct uroce_netif_list *ifs, int index)
{
	struct compat_device *d = calloc(1, sizeof(*d));
	struct uroce_devinfo info;

	if (!d)
		return NULL;
	atomic_init(&d->refs, 1);
	d->index = index;
	d->def = *def;
	d->ops = &uroce_verbs_device_ops;
	d->dev.node_type = IBV_NODE_CA;
	d->dev.transport_type = IBV_TRANSPORT_IB; /* what RoCE devices report */
	snprintf(d->dev.name, sizeof(d->dev.name), "%s", def->name);
	/* UCX looks for /dev/infiniband/<dev_name>; rdma-core names them uverbsN. */
	snprintf(d->dev.dev_name, sizeof(d->dev.dev_name), "uverbs%d", index);
	snprintf(d->dev.dev_path, sizeof(d->dev.dev_path), "/sys/class/infiniband_verbs/uverbs%d",
		 index);
	snprintf(d->dev.ibdev_path, sizeof(d->dev.ibdev_path), "/sys/class/infiniband/%.63s",
		 def->name);
	uroce_dev_info(def, ifs, &info);
	if (info.netdev_present)
		memcpy(d->node_guid, info.node_guid, sizeof(d->node_guid));
	else
		uroce_dev_node_guid(def->name, (const uint8_t[6]){0}, d->node_guid);
	return d;
}

struct ibv_device **ibv_get_device_list(int *num_devices)
{
	struct uroce_netif_list ifs;
	struct uroce_devdef *defs = NULL;
	struct ibv_device **list = NULL;
	char rundir[4096];
	int err, n = 0, k = 0;

	if (num_devices)
		*num_devices = 0;
	err = uroce_netif_scan(&ifs);
	if (err) {
		errno = -err;
		return NULL;
	}
	/* No run-time directory (no XDG_RUNTIME_DIR as a user): only automatic devices. */
	if (uroce_rundir_path(rundir, sizeof(rundir)))
		snprintf(rundir, sizeof(rundir), "/nonexistent");
	err = uroce_dev_list(rundir, &ifs, &defs, &n);
	if (err) {
		uroce_netif_list_free(&ifs);
		errno = -err;
		return NULL;
	}
	list = calloc((size_t)n + 1, sizeof(*list));
	if (!list)
		goto nomem;
	for (k = 0; k < n; k++) {
		struct compat_device *d = device_new(&defs[k], &ifs, k);

		if (!d)
			goto nomem;
		list[k] = &d->dev;
	}
	free(defs);
	uroce_netif_list_free(&ifs);
	if (num_devices)
		*num_devices = n;
	return list;
nomem:
	if (list) {
		for (int i = 0; i < k; i++)
			device_put(compat_container_of(list[i], struct compat_device, dev));
		free(list);
	}
	free(defs);
	uroce_netif_list_free(&ifs);
	errno = ENOMEM;
	return NULL;
}

void ibv_free_device_list(struct ibv_device **list)
{
	if (!list)
		return;
	for (struct ibv_device **p = list; *p; p++)
		device_put(compat_container_of(*p, struct compat_device, dev));
	free(list);
}

const char *ibv_get_device_name(struct ibv_device *device)
{
	return device->name;
}

__be64 ibv_get_device_guid(struct ibv_device *device)
{
	const struct compat_device *d = compat_container_of(device, struct compat_device, dev);
	__be64 guid;

	memcpy(&guid, d->node_guid, sizeof(guid)); /* already in network order */
	return guid;
}

int ibv_get_device_index(struct ibv_device *device)
{
	return compat_container_of(device, struct compat_device, dev)->index;
}

struct ibv_context *ibv_open_device(struct ibv_device *device)
{
	struct compat_device *d = compat_container_of(device, struct compat_device, dev);
	struct compat_ctx *ctx = calloc(1, sizeof(*ctx));
	struct uroce_ctx_cfg cfg = {0};
	int err;

	if (!ctx) {
		errno = ENOMEM;
		return NULL;
	}
	ctx->dev = d;
	pthread_mutex_init(&ctx->ev_lock, NULL);
	pthread_mutex_init(&ctx->linger_lock, NULL);
	ctx->vctx.sz = sizeof(ctx->vctx);
	ctx->vctx.context.device = device;
	/* A real descriptor, though nothing is sent through it: applications dup it to import the
	 * device elsewhere (pyverbs' shared PD tests), and ibv_import_device then refuses it. */
	ctx->vctx.context.cmd_fd = open("/dev/null", O_RDWR | O_CLOEXEC);
	ctx->vctx.context.num_comp_vectors = 1;
	ctx->vctx.context.abi_compat = __VERBS_ABI_IS_EXTENDED;
	pthread_mutex_init(&ctx->vctx.context.mutex, NULL);
	uroce_compat_ctx_set_ops(ctx);
	/* A counting eventfd: one count per queued async event, pollable, and it honours the
	 * O_NONBLOCK the application may set (UCX does). */
	ctx->vctx.context.async_fd = eventfd(0, EFD_CLOEXEC | EFD_SEMAPHORE);
	if (ctx->vctx.context.cmd_fd < 0 || ctx->vctx.context.async_fd < 0) {
		err = -errno;
		goto fail;
	}
	cfg.on_event = uroce_compat_on_event;
	cfg.on_round = uroce_compat_on_round;
	cfg.arg = ctx;
	err = uroce_ctx_open(d->def.name, &cfg, &ctx->uc);
	if (err)
		goto fail;
	atomic_fetch_add(&d->refs, 1);
	return &ctx->vctx.context;
fail:
	if (ctx->vctx.context.async_fd >= 0)
		close(ctx->vctx.context.async_fd);
	if (ctx->vctx.context.cmd_fd >= 0)
		close(ctx->vctx.context.cmd_fd);
	pthread_mutex_destroy(&ctx->vctx.context.mutex);
	pthread_mutex_destroy(&ctx->ev_lock);
	pthread_mutex_destroy(&ctx->linger_lock);
	free(ctx);
	errno = -err;
	return NULL;
}

int ibv_close_device(struct ibv_context *context)
{
	struct compat_ctx *ctx = compat_ctx_of(context);

	uroce_ctx_close(ctx->uc);
	while (ctx->ev_head) {
		struct compat_async *a = ctx->ev_head;

		ctx->ev_head = a->next;
		free(a);
	}
	close(context->async_fd);
	close(context->cmd_fd);
	pthread_mutex_destroy(&context->mutex);
	pthread_mutex_destroy(&ctx->ev_lock);
	pthread_mutex_destroy(&ctx->linger_lock);
	device_put(ctx->dev);
	free(ctx);
	return 0;
}

/* ---- sysfs --------------------------------------------------------------------------------- */

const char *ibv_get_sysfs_path(void)
{
	/* As rdma-core: $SYSFS_PATH unless set-uid, without trailing slashes; else /sys. */
	static char path[256];
	const char *env = getuid() == geteuid() ? getenv("SYSFS_PATH") : NULL;
	size_t len;

	if (!env || !*env)
		return "/sys";
	len = strnlen(env, sizeof(path) - 1);
	while (len > 1 && env[len - 1] == '/')
		len--;
	memcpy(path, env, len);
	path[len] = '\0';
	return path;
}

int ibv_read_sysfs_file(const char *dir, const char *file, char *buf, size_t size)
{
	char *path;
	ssize_t len;
	int fd;

	if (asprintf(&path, "%s/%s", dir, file) < 0)
		return -1;
	fd = open(path, O_RDONLY | O_CLOEXEC);
	free(path);
	if (fd < 0)
		return -1;
	len = read(fd, buf, size);
	close(fd);
	if (len > 0) {
		if ((size_t)len == size)
			len--;
		if (buf[len - 1] == '\n')
			len--;
		buf[len] = '\0';
	}
	return (int)len;
}

int ibv_read_ibdev_sysfs_file(char *buf, size_t size, struct verbs_sysfs_dev *sysfs_dev,
			      const char *fnfmt, ...)
{
	(void)buf;
	(void)size;
	(void)sysfs_dev;
	(void)fnfmt;
	errno = EOPNOTSUPP;
	return -1;
}
