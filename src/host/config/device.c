/* SPDX-License-Identifier: MIT */
/* Device definitions in the run-time directory, automatic devices, per-device derived facts. */
#include "host/config/device.h"

#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <net/if_arp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "host/config/rundir.h"

#define DEF_FILE_MAX 1024

static bool name_char_ok(char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
	       c == '_' || c == '.' || c == '-';
}

int uroce_dev_name_check(const char *name)
{
	size_t n = strlen(name);

	if (n == 0 || n > UROCE_DEV_NAME_MAX || name[0] == '.')
		return -EINVAL;
	for (size_t i = 0; i < n; i++) {
		if (!name_char_ok(name[i]))
			return -EINVAL;
	}
	return 0;
}

int uroce_roce_parse(const char *s, unsigned *mask)
{
	if (!strcmp(s, "v1"))
		*mask = UROCE_ROCE_V1;
	else if (!strcmp(s, "v2"))
		*mask = UROCE_ROCE_V2;
	else if (!strcmp(s, "v1,v2") || !strcmp(s, "v2,v1"))
		*mask = UROCE_ROCE_BOTH;
	else
		return -EINVAL;
	return 0;
}

const char *uroce_roce_str(unsigned mask)
{
	switch (mask & UROCE_ROCE_BOTH) {
	case UROCE_ROCE_V1:
		return "v1";
	case UROCE_ROCE_V2:
		return "v2";
	case UROCE_ROCE_BOTH:
		return "v1,v2";
	default:
		return "none";
	}
}

/* ---- MTU, rate and GUID --------------------------------------------------------------- */

/* Round down to an IB MTU; -EINVAL below 256. */
static int ib_mtu_floor(long n)
{
	static const int mtus[] = { 4096, 2048, 1024, 512, 256 };

	for (size_t i = 0; i < sizeof(mtus) / sizeof(mtus[0]); i++) {
		if (n >= mtus[i])
			return mtus[i];
	}
	return -EINVAL;
}

int uroce_mtu_active(unsigned eth_mtu)
{
	/* RXE_MAX_HDR_LENGTH = 80 (rxe_param.h eth_mtu_int_to_enum). */
	return ib_mtu_floor((long)eth_mtu - 80);
}

int uroce_mtu_path(unsigned eth_mtu)
{
	/* iboe_get_mtu(): GRH 40 + UDP 8 + BTH 12 + XRC 4 + AtomicETH 28 + ICRC 4 = 96. */
	return ib_mtu_floor((long)eth_mtu - 96);
}

int uroce_mtu_enum(int bytes)
{
	switch (bytes) {
	case 256:
		return 1;
	case 512:
		return 2;
	case 1024:
		return 3;
	case 2048:
		return 4;
	case 4096:
		return 5;
	default:
		return 0;
	}
}

void uroce_ib_rate_from_eth(unsigned mbps, uint8_t *width, uint8_t *speed)
{
	/* ib_get_width_and_speed() without lanes: the first row whose limit is not below. */
	static const struct {
		unsigned max_mbps;
		uint8_t width, speed;
	} rows[] = {
		{1000, UROCE_IB_WIDTH_1X, UROCE_IB_SPEED_SDR},
		{10000, UROCE_IB_WIDTH_1X, UROCE_IB_SPEED_FDR10},
		{20000, UROCE_IB_WIDTH_4X, UROCE_IB_SPEED_DDR},
		{25000, UROCE_IB_WIDTH_1X, UROCE_IB_SPEED_EDR},
		{40000, UROCE_IB_WIDTH_4X, UROCE_IB_SPEED_FDR10},
		{50000, UROCE_IB_WIDTH_2X, UROCE_IB_SPEED_EDR},
		{100000, UROCE_IB_WIDTH_4X, UROCE_IB_SPEED_EDR},
		{200000, UROCE_IB_WIDTH_4X, UROCE_IB_SPEED_HDR},
	};

	if (mbps == 0)
		mbps = UROCE_ETH_SPEED_DEFAULT;
	*width = UROCE_IB_WIDTH_4X;
	*speed = UROCE_IB_SPEED_NDR; /* above 200000 */
	for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
		if (mbps <= rows[i].max_mbps) {
			*width = rows[i].width;
			*speed = rows[i].speed;
			return;
		}
	}
}

void uroce_eui64(const uint8_t mac[6], uint8_t out[8])
{
	out[0] = mac[0] ^ 0x02;
	out[1] = mac[1];
	out[2] = mac[2];
	out[3] = 0xff;
	out[4] = 0xfe;
	out[5] = mac[3];
	out[6] = mac[4];
	out[7] = mac[5];
}

bool uroce_dev_node_guid(const char *name, const uint8_t mac[6], uint8_t out[8])
{
	static const uint8_t zero[6];
	uint64_t h = 0xcbf29ce484222325ull; /* FNV-1a 64 */

	if (memcmp(mac, zero, 6) != 0) {
		uroce_eui64(mac, out);
		return false;
	}
	for (const char *p = name; *p; p++) {
		h ^= (uint8_t)*p;
		h *= 0x100000001b3ull;
	}
	for (int i = 0; i < 8; i++)
		out[i] = (uint8_t)(h >> (56 - 8 * i));
	out[0] &= (uint8_t)~0x03; /* local (modified EUI-64 u = 0), individual */
	if (!(out[1] | out[2] | out[3] | out[4] | out[5] | out[6] | out[7]))
		out[7] = 1; /* never the zero GUID */
	return true;
}

void uroce_dev_info(const struct uroce_devdef *def, const struct uroce_netif_list *ifs,
		    struct uroce_devinfo *info)
{
	const struct uroce_netif *nif = uroce_netif_find(ifs, def->netdev);

	memset(info, 0, sizeof(*info));
	if (!nif)
		return;
	info->netdev_present = true;
	info->active = uroce_netif_active(nif);
	info->ifindex = nif->ifindex;
	info->eth_mtu = nif->mtu;
	info->active_mtu = uroce_mtu_active(nif->mtu);
	if (info->active_mtu < 0) {
		info->active_mtu = 256; /* rxe_set_mtu clamps a too-small MTU up to IB_MTU_256 */
		info->mtu_too_small = true;
	}
	info->path_mtu = uroce_mtu_path(nif->mtu);
	memcpy(info->mac, nif->mac, 6);
	info->guid_from_name = uroce_dev_node_guid(def->name, nif->mac, info->node_guid);
	info->eth_speed_mbps = nif->speed_mbps;
	uroce_ib_rate_from_eth(nif->speed_mbps, &info->ib_width, &info->ib_speed);
}

/* ---- definitions ---------------------------------------------------------------------- */

int uroce_dev_path(const char *rundir, const char *name, char *buf, size_t cap)
{
	return uroce_rundir_join(buf, cap, "%s/devices/%s", rundir, name);
}

/* Parse a definition file's text. Returns 0 or -EBADMSG. */
static int def_parse(const char *name, char *text, struct uroce_devdef *d)
{
	bool have_netdev = false;
	char *save = NULL;

	memset(d, 0, sizeof(*d));
	if (strlen(name) >= sizeof(d->name))
		return -EBADMSG;
	memcpy(d->name, name, strlen(name) + 1);
	d->roce = UROCE_ROCE_V2;
	for (char *line = strtok_r(text, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		char *val = strchr(line, ' ');

		if (!val)
			continue;
		*val++ = '\0';
		if (!strcmp(line, "netdev")) {
			if (!*val || strlen(val) >= sizeof(d->netdev))
				return -EBADMSG;
			snprintf(d->netdev, sizeof(d->netdev), "%s", val);
			have_netdev = true;
		} else if (!strcmp(line, "roce")) {
			if (uroce_roce_parse(val, &d->roce))
				return -EBADMSG;
		}
	}
	return have_netdev ? 0 : -EBADMSG;
}

static int def_cmp(const void *a, const void *b)
{
	return strcmp(((const struct uroce_devdef *)a)->name,
		      ((const struct uroce_devdef *)b)->name);
}

/* The defined devices, sorted by name. */
static int list_defined(const char *rundir, struct uroce_devdef **out, int *n)
{
	char dir[PATH_MAX], path[PATH_MAX], text[DEF_FILE_MAX];
	struct uroce_devdef *v = NULL, d;
	struct dirent *e;
	DIR *dp;
	int cnt = 0, err;

	*out = NULL;
	*n = 0;
	err = uroce_rundir_join(dir, sizeof(dir), "%s/devices", rundir);
	if (err)
		return err;
	dp = opendir(dir);
	if (!dp)
		return errno == ENOENT ? 0 : -errno;
	while ((e = readdir(dp)) != NULL) {
		if (uroce_dev_name_check(e->d_name))
			continue; /* ".", "..", temp files */
		if (uroce_dev_path(rundir, e->d_name, path, sizeof(path)) ||
		    uroce_rundir_read(path, text, sizeof(text), NULL) ||
		    def_parse(e->d_name, text, &d))
			continue;
		struct uroce_devdef *nv = realloc(v, (size_t)(cnt + 1) * sizeof(*v));

		if (!nv) {
			closedir(dp);
			free(v);
			return -ENOMEM;
		}
		v = nv;
		v[cnt++] = d;
	}
	closedir(dp);
	if (cnt > 1)
		qsort(v, (size_t)cnt, sizeof(*v), def_cmp);
	*out = v;
	*n = cnt;
	return 0;
}

int uroce_dev_any_defined(const char *rundir)
{
	struct uroce_devdef *v;
	int n, err = list_defined(rundir, &v, &n);

	free(v);
	return err ? err : n > 0;
}

static int list_auto(const struct uroce_netif_list *ifs, struct uroce_devdef **out, int *n)
{
	struct uroce_devdef *v;
	int cnt = 0;

	*out = NULL;
	*n = 0;
	if (ifs->n == 0)
		return 0;
	v = calloc((size_t)ifs->n, sizeof(*v));
	if (!v)
		return -ENOMEM;
	for (int i = 0; i < ifs->n; i++) {
		const struct uroce_netif *nif = &ifs->ifs[i];
		struct uroce_devdef *d = &v[cnt];

		if (!(nif->flags & IFF_UP) || nif->naddrs == 0)
			continue;
		snprintf(d->name, sizeof(d->name), UROCE_DEV_AUTO_PREFIX "%s", nif->name);
		for (char *p = d->name; *p; p++) {
			if (!name_char_ok(*p))
				*p = '_';
		}
		snprintf(d->netdev, sizeof(d->netdev), "%s", nif->name);
		d->roce = UROCE_ROCE_V2;
		d->automatic = true;
		cnt++;
	}
	*out = v;
	*n = cnt;
	if (cnt == 0) {
		free(v);
		*out = NULL;
	}
	return 0;
}

/* A device with what orders it. */
struct dev_key {
	bool loopback;
	unsigned ifindex;
	struct uroce_devdef def;
};

static int dev_key_cmp(const void *a, const void *b)
{
	const struct dev_key *x = a, *y = b;

	if (x->loopback != y->loopback)
		return x->loopback ? 1 : -1;
	if (x->def.automatic && y->def.automatic && x->ifindex != y->ifindex)
		return x->ifindex < y->ifindex ? -1 : 1;
	return strcmp(x->def.name, y->def.name);
}

/* Put v[0..n) in uroce_dev_list()'s order using the snapshot ifs. */
static int order(struct uroce_devdef *v, int n, const struct uroce_netif_list *ifs)
{
	struct dev_key *k;

	if (n < 2)
		return 0;
	k = calloc((size_t)n, sizeof(*k));
	if (!k)
		return -ENOMEM;
	for (int i = 0; i < n; i++) {
		const struct uroce_netif *nif = uroce_netif_find(ifs, v[i].netdev);

		k[i].def = v[i];
		k[i].loopback = nif && (nif->flags & IFF_LOOPBACK);
		k[i].ifindex = nif ? nif->ifindex : 0;
	}
	qsort(k, (size_t)n, sizeof(*k), dev_key_cmp);
	for (int i = 0; i < n; i++)
		v[i] = k[i].def;
	free(k);
	return 0;
}

/* The devices that exist, unordered: defined ones, else automatic ones from ifs (scanned when
 * NULL). */
static int list_unordered(const char *rundir, const struct uroce_netif_list *ifs,
			  struct uroce_devdef **out, int *n)
{
	struct uroce_netif_list own;
	int err = list_defined(rundir, out, n);

	if (err || *n > 0)
		return err;
	free(*out);
	if (ifs)
		return list_auto(ifs, out, n);
	err = uroce_netif_scan(&own);
	if (err)
		return err;
	err = list_auto(&own, out, n);
	uroce_netif_list_free(&own);
	return err;
}

int uroce_dev_list(const char *rundir, const struct uroce_netif_list *ifs,
		   struct uroce_devdef **out, int *n)
{
	struct uroce_netif_list own = {0};
	int err;

	if (!ifs) {
		err = uroce_netif_scan(&own);
		if (err)
			return err;
		ifs = &own;
	}
	err = list_unordered(rundir, ifs, out, n);
	if (!err) {
		err = order(*out, *n, ifs);
		if (err) {
			free(*out);
			*out = NULL;
			*n = 0;
		}
	}
	uroce_netif_list_free(&own);
	return err;
}

int uroce_dev_find(const char *rundir, const char *name, struct uroce_devdef *out)
{
	struct uroce_devdef *v;
	int n, err;

	err = list_unordered(rundir, NULL, &v, &n);
	if (err)
		return err;
	err = -ENODEV;
	for (int i = 0; i < n; i++) {
		if (!strcmp(v[i].name, name)) {
			*out = v[i];
			err = 0;
			break;
		}
	}
	free(v);
	return err;
}

int uroce_dev_add(const char *rundir, const struct uroce_devdef *def,
		  char other[UROCE_DEV_NAME_MAX + 1])
{
	struct uroce_netif_list ifs;
	struct uroce_devdef *v;
	char path[PATH_MAX], text[DEF_FILE_MAX];
	int n, err, len;
	bool present;

	if (uroce_dev_name_check(def->name) || !def->roce ||
	    (def->roce & ~(unsigned)UROCE_ROCE_BOTH))
		return -EINVAL;
	err = uroce_netif_scan(&ifs);
	if (err)
		return err;
	const struct uroce_netif *nif = uroce_netif_find(&ifs, def->netdev);

	present = nif != NULL;
	/* RoCE v1 frames are Ethernet frames (AF_PACKET): a tunnel or tun device has none. */
	bool v1_ok = nif && (nif->arphrd == ARPHRD_ETHER || nif->arphrd == ARPHRD_LOOPBACK);

	uroce_netif_list_free(&ifs);
	if (!present)
		return -ENODEV;
	if ((def->roce & UROCE_ROCE_V1) && !v1_ok)
		return -EPFNOSUPPORT;
	err = list_defined(rundir, &v, &n);
	if (err)
		return err;
	for (int i = 0; i < n; i++) {
		if (!strcmp(v[i].name, def->name)) {
			err = -EEXIST;
		} else if (!strcmp(v[i].netdev, def->netdev)) {
			if (other)
				snprintf(other, UROCE_DEV_NAME_MAX + 1, "%s", v[i].name);
			err = -EBUSY;
		}
		if (err)
			break;
	}
	free(v);
	if (err)
		return err;
	len = snprintf(text, sizeof(text), "netdev %s\nroce %s\n", def->netdev,
		       uroce_roce_str(def->roce));
	if (len < 0 || (size_t)len >= sizeof(text))
		return -EINVAL;
	err = uroce_dev_path(rundir, def->name, path, sizeof(path));
	if (err)
		return err;
	return uroce_rundir_write(path, text, (size_t)len, true);
}
