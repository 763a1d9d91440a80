/* fuzz_modalias: untrusted bytes as a device modalias (the first line) and
 * a host modules.alias (the rest), through vfio_alias_best_fd, with
 * property checks:
 * - the driver is a valid driver name, and either "vfio-pci" or the module
 *   of an "alias vfio_pci:" line of the input, which why quotes;
 * - why is a NUL-terminated string within VFIO_WHY_MAX, never empty;
 * - an input whose modalias is not "pci:" gives vfio-pci.
 *
 * Built two ways, as the other targets: libFuzzer (make fuzz), and a replay
 * main() over tests/fuzz/corpus/modalias under ASan+UBSan (make test). */
#include "../../core/vfio.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char modalias[160], drv[VFIO_DRV_MAX + 8], why[VFIO_WHY_MAX + 8], needle[VFIO_DRV_MAX + 16];
	const uint8_t *nl = memchr(data, '\n', size);
	size_t ml = nl ? (size_t)(nl - data) : size;
	int fd;

	if (ml >= sizeof(modalias))
		ml = sizeof(modalias) - 1;
	memcpy(modalias, data, ml);
	modalias[ml] = '\0';
	if ((fd = memfd_create("modules.alias", 0)) < 0)
		return 0;
	if (nl && write(fd, nl + 1, size - ml - 1) != (ssize_t)(size - ml - 1)) {
		close(fd);
		return 0;
	}
	lseek(fd, 0, SEEK_SET);
	memset(drv, 'x', sizeof(drv));
	memset(why, 'x', sizeof(why));
	vfio_alias_best_fd(fd, "fuzz", modalias, drv, why);
	close(fd);
	if (!memchr(drv, '\0', VFIO_DRV_MAX) || !memchr(why, '\0', VFIO_WHY_MAX) || !why[0])
		abort();
	if (!vfio_valid_driver(drv))
		abort();
	if (strncmp(modalias, "pci:", 4) != 0 && strcmp(drv, "vfio-pci") != 0)
		abort();
	if (strcmp(drv, "vfio-pci") != 0) {
		snprintf(needle, sizeof(needle), " %s (", drv);
		if (strncmp(why, "alias vfio_pci:", 15) != 0 || !strstr(why, needle))
			abort();
	}
	return 0;
}

#include "replay.h"
