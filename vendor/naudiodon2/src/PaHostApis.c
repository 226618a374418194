/* speaker-agent patch (PATCHES.md item 13): PortAudio's table of host APIs, ALSA only.
 *
 * The addon links Debian's static PortAudio (libportaudio.a from portaudio19-dev, built PIC on every
 * architecture). Its own table (pa_unix_hostapis.o) lists ALSA, OSS and JACK, and referencing PaJack_Initialize
 * made every process link libjack and, through it, Berkeley DB: 1.9 MB of the idle agent's resident memory for
 * a sound server a speaker does not run. Defining the table here means the linker never takes
 * pa_unix_hostapis.o (an archive member is only pulled in for a symbol still undefined), and so neither
 * pa_jack.o nor pa_unix_oss.o. ALSA reaches every card, and PulseAudio or PipeWire through their ALSA plugins. */
#include <portaudio.h>

struct PaUtilHostApiRepresentation;
typedef PaError PaUtilHostApiInitializer(struct PaUtilHostApiRepresentation **hostApi, PaHostApiIndex index);

PaError PaAlsa_Initialize(struct PaUtilHostApiRepresentation **hostApi, PaHostApiIndex index);

PaUtilHostApiInitializer *paHostApiInitializers[] = { PaAlsa_Initialize, 0 };
