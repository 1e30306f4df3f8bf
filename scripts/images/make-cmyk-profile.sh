#!/usr/bin/env bash
# Rebuilds src/services/images/profiles/cmyk-fogra39.icc, the CMYK output profile svc ships.
# Source data: FOGRA39L.ti3 from Debian's icc-profiles-free (Zlib licence; characterization of
# ISO 12647-2 coated offset printing by Fogra, packaged by Kai-Uwe Behrmann).
# Tool: ArgyllCMS colprof (Debian `argyll`); its output profiles are free of its own licence.
# srgb.icc beside it is icc-profiles-free's sRGB.icc (Zlib), copied as is.
set -euo pipefail
work=$(mktemp -d)
cd "$work"
apt-get download icc-profiles-free >/dev/null
dpkg-deb -x icc-profiles-free_*.deb x
cp x/usr/share/color/icc/FOGRA39L.ti3 .
colprof -qm -kr -D"svc CMYK (FOGRA39L characterization, Argyll colprof)" \
  -C"Built from FOGRA39L.ti3 (icc-profiles-free, Zlib licence, Kai-Uwe Behrmann) with ArgyllCMS colprof" FOGRA39L
cp FOGRA39L.icc "$OLDPWD/src/services/images/profiles/cmyk-fogra39.icc"
