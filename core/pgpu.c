#include "pgpu.h"

#include <stdio.h>
#include <string.h>

void pgpu_normalise(const char *s, char *out, size_t max)
{
	size_t n = 0;
	int dash = 0;

	for (; *s && n < max; s++) {
		unsigned char c = (unsigned char)*s;

		if (c >= 'A' && c <= 'Z')
			c = (unsigned char)(c - 'A' + 'a');
		if ((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9')) {
			if (dash && n > 0 && n + 1 < max)
				out[n++] = '-';
			dash = 0;
			out[n++] = (char)c;
		} else {
			dash = 1;
		}
	}
	while (n > 0 && out[n - 1] == '-')
		n--;
	out[n] = '\0';
}

void pgpu_name(const char *node, const char *addr, char *out)
{
	char raw[PGPU_NAME_MAX + 64];

	snprintf(raw, sizeof(raw), "%s-%s", node, addr);
	pgpu_normalise(raw, out, PGPU_NAME_MAX);
}

const char *pgpu_driver_type(const char *drv)
{
	if (!*drv)
		return "None";
	if (strcmp(drv, "nvidia") == 0)
		return "Nvidia";
	if (strstr(drv, "vfio")) /* vfio-pci and its variants (nvgrace_gpu_vfio_pci) */
		return "VFIO";
	if (strcmp(drv, "amdgpu") == 0)
		return "ROCm";
	return "Other";
}
