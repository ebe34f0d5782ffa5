/* M0+ build (newlib): see m0_net.h */
#include "m0_net.h"
