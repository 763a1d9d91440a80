/* pgpu: the architecture tables (pci.ids chip codes and families, NVIDIA
 * device-ID ranges), gpu-feature-discovery's name sanitising (GFD's own
 * TestSanitise table, in our format), and the NVRM version line of both
 * NVIDIA kernel modules. */
#include "t.h"

#include "../../core/pgpu.h"

static const struct {
	unsigned vendor, device;
	const char *name, *arch, *cc;
	int from;
} archs[] = {
	/* NVIDIA: the chip code that starts the pci.ids name */
	{ 0x10de, 0x20b5, "GA100 [A100 PCIe 80GB]", "Ampere", "8.0", 1 },
	{ 0x10de, 0x20b7, "GA100GL [A30 PCIe]", "Ampere", "8.0", 1 },
	{ 0x10de, 0x2204, "GA102 [GeForce RTX 3090]", "Ampere", "8.6", 1 },
	{ 0x10de, 0x2330, "GH100[H100 SXM5 80GB]", "Hopper", "9.0", 1 }, /* pci.ids 2023: no space */
	{ 0x10de, 0x26b9, "AD102GL [L40S]", "Ada Lovelace", "8.9", 1 },
	{ 0x10de, 0x1eb8, "TU104GL [Tesla T4]", "Turing", "7.5", 1 },
	{ 0x10de, 0x1db5, "GV100GL [Tesla V100 SXM2 32GB]", "Volta", "7.0", 1 },
	{ 0x10de, 0x15f8, "GP100GL [Tesla P100 PCIe 16GB]", "Pascal", "6.0", 1 },
	{ 0x10de, 0x1b38, "GP102GL [Tesla P40]", "Pascal", "6.1", 1 },
	{ 0x10de, 0x102d, "GK210GL [Tesla K80]", "Kepler", "3.7", 1 },
	{ 0x10de, 0x13f2, "GM204GL [Tesla M60]", "Maxwell", "5.2", 1 },
	{ 0x10de, 0x2901, "GB100 [B200]", "Blackwell", "10.0", 1 },
	{ 0x10de, 0x3182, "GB110 [B300 SXM6 AC]", "Blackwell", "10.3", 1 },
	{ 0x10de, 0x2b85, "GB202 [GeForce RTX 5090]", "Blackwell", "12.0", 1 },
	{ 0x10de, 0x2e12, "GB20B [GB10]", "Blackwell", "12.1", 1 },
	/* NVIDIA without a name: the device-ID range (approximate) */
	{ 0x10de, 0x2331, NULL, "Hopper", "9.0", 2 },
	{ 0x10de, 0x20b0, "", "Ampere", "8.0", 2 },
	{ 0x10de, 0x2684, NULL, "Ada Lovelace", "8.9", 2 },
	{ 0x10de, 0x0fff, NULL, "", "", 0 },
	/* AMD and Intel: the family word of the name; no compute capability */
	{ 0x1002, 0x740f, "Aldebaran/MI200 [Instinct MI210]", "CDNA2", "", 1 },
	{ 0x1002, 0x74a1, "Aqua Vanjaram [Instinct MI300X]", "CDNA3", "", 1 },
	{ 0x1002, 0x75a3, "Aqua Vanjaram [Instinct MI355X]", "CDNA4", "", 1 },
	{ 0x1002, 0x738c, "Arcturus GL-XL [Instinct MI100]", "CDNA", "", 1 },
	{ 0x1002, 0x744c, "Navi 31 [Radeon RX 7900 XT/7900 XTX/7900 GRE/7900M]", "RDNA3", "", 1 },
	{ 0x1002, 0x73bf, "Navi 21 [Radeon RX 6800/6800 XT / 6900 XT]", "RDNA2", "", 1 },
	{ 0x1002, 0x7550, "Navi 48 [Radeon RX 9070/9070 XT/9070 GRE]", "RDNA4", "", 1 },
	{ 0x1002, 0x66a1, "Vega 20 [Radeon Pro VII/Radeon Instinct MI50]", "GCN5", "", 1 },
	{ 0x1002, 0x1478, "Navi 10 XL Upstream Port of PCI Express Switch", "RDNA", "", 1 },
	{ 0x1002, 0x740f, NULL, "", "", 0 },
	{ 0x8086, 0x0bd5, "Ponte Vecchio XT (2 Tile) [Data Center GPU Max 1550]", "Xe-HPC", "", 1 },
	{ 0x8086, 0x56c0, "ATS-M [Data Center GPU Flex 170]", "Xe-HPG", "", 1 },
	{ 0x8086, 0xe20b, "Battlemage G21 [Arc B580]", "Xe2-HPG", "", 1 },
	{ 0x8086, 0x9a49, "TigerLake-LP GT2 [Iris Xe Graphics]", "Xe-LP", "", 1 },
	{ 0x8086, 0x4680, "Alder Lake-S GT1 [UHD Graphics 770]", "Xe-LP", "", 1 },
	{ 0x8086, 0x3e92, "CoffeeLake-S GT2 [UHD Graphics 630]", "Gen9", "", 1 },
	{ 0x8086, 0x7d55, "Meteor Lake-P [Intel Arc Graphics]", "Xe-LPG", "", 1 },
	{ 0x8086, 0x1234, "Some Future GPU", "", "", 0 },
	{ 0x9999, 0x0a01, "C500", "", "", 0 },
};

/* GFD's TestSanitise table (k8s-device-plugin internal/lm/resource_test.go) */
static const char *const sanitise[][2] = {
	{ "a space separated string", "a-space-separated-string" },
	{ "some(thing)else", "somethingelse" },
	{ "some ( thing )else", "some-thing-else" },
	{ "NVIDIA-TITAN-X-(Pascal)", "NVIDIA-TITAN-X-Pascal" },
	{ " input  with multiple   spaces   ", "input-with-multiple-spaces" },
	{ "some [ / thing / ]else", "some-thing-else" },
	{ "some / thing /else", "some-thing-else" },
	{ "some-thing.else_new", "some-thing.else_new" },
	/* ours */
	{ "NVIDIA A100 80GB PCIe", "NVIDIA-A100-80GB-PCIe" },
	{ "\t\n", "" },
	{ "caf\xc3\xa9 \x01 GPU", "caf-GPU" },
};

static const char *const versions[][2] = {
	{ "NVRM version: NVIDIA UNIX x86_64 Kernel Module  535.104.05  Sat Aug 19 01:15:15 UTC 2023\n"
	  "GCC version:  gcc version 12.2.0\n", "535.104.05" },
	{ "NVRM version: NVIDIA UNIX Open Kernel Module for x86_64  575.57.08  Release Build  "
	  "(dvs-builder@U16)  Tue May 20 2025\n", "575.57.08" },
	{ "NVRM version: NVIDIA UNIX Open Kernel Module for aarch64  550.54.15  Release Build\n", "550.54.15" },
	{ "NVRM version: NVIDIA UNIX x86_64 Kernel Module  515.76  Mon Sep 12 19:21:56 UTC 2022\n", "515.76" },
	{ "NVRM version: NVIDIA UNIX x86_64 Kernel Module  535.54.03", "535.54.03" }, /* no newline */
	{ "NVRM version: NVIDIA UNIX x86_64 Kernel Module  banana  today\n", NULL },
	{ "NVRM version: something else\nGCC version: Module 1.2.3\n", NULL }, /* not on the first line */
	{ "", NULL },
	{ "NVRM version: NVIDIA UNIX x86_64 Kernel Module  1.2.3.4 5.\n", NULL },
};

int main(void)
{
	char out[128];

	for (size_t i = 0; i < sizeof(archs) / sizeof(archs[0]); i++) {
		const char *arch = "?", *cc = "?";
		int from = pgpu_arch(archs[i].vendor, archs[i].device, archs[i].name, &arch, &cc);
		char name[160];

		snprintf(name, sizeof(name), "arch: %04x:%04x %s", archs[i].vendor, archs[i].device,
			 archs[i].name ? archs[i].name : "(no name)");
		T_OK(name, from == archs[i].from && !strcmp(arch, archs[i].arch) && !strcmp(cc, archs[i].cc),
		     "got %d %s %s, want %d %s %s", from, arch, cc, archs[i].from, archs[i].arch, archs[i].cc);
	}
	T_STR("computeAPI: NVIDIA", pgpu_compute_api(0x10de), "CUDA");
	T_STR("computeAPI: AMD", pgpu_compute_api(0x1002), "ROCm");
	T_STR("computeAPI: Intel", pgpu_compute_api(0x8086), "oneAPI");
	T_STR("computeAPI: MetaX", pgpu_compute_api(0x9999), "MACA");
	T_OK("computeAPI: Habana: none", pgpu_compute_api(0x1da3) == NULL, "got %s", pgpu_compute_api(0x1da3));
	for (size_t i = 0; i < sizeof(sanitise) / sizeof(sanitise[0]); i++) {
		char name[96];

		snprintf(name, sizeof(name), "gfd sanitise: case %zu", i);
		pgpu_gfd_sanitise(sanitise[i][0], out, sizeof(out));
		T_STR(name, out, sanitise[i][1]);
	}
	pgpu_gfd_sanitise("abcdefgh", out, 5);
	T_STR("gfd sanitise: bounded by the buffer", out, "abc");
	for (size_t i = 0; i < sizeof(versions) / sizeof(versions[0]); i++) {
		char name[64];
		int rc = pgpu_nvidia_version(versions[i][0], out, sizeof(out));

		snprintf(name, sizeof(name), "nvidia version: case %zu", i);
		if (versions[i][1])
			T_OK(name, rc == 0 && !strcmp(out, versions[i][1]), "rc %d got %s want %s", rc, out, versions[i][1]);
		else
			T_OK(name, rc < 0 && !*out, "rc %d got %s, want none", rc, out);
	}
	T_OK("nvidia version: too small a buffer", pgpu_nvidia_version(versions[0][0], out, 6) < 0, "got %s", out);
	return t_done();
}
