#!/bin/sh
# Fetch the statistics papers of the stats crop golds (tests/data/crop_gold_stats*.md): the PDF
# vignettes that Debian's R packages ship, saved as DIR/<package>__<name>.pdf. The PDFs are the
# packages' authors' (mostly GPL); they are not kept in this repository. The golds record each
# file's sha256, so a package version other than the one labelled is detected by the scorer
# (its papers then count as missing).
#
#   scripts/fetch_vignettes.sh DIR [PACKAGE ...]
set -eu
[ $# -ge 1 ] || { echo "usage: $0 DIR [PACKAGE ...]" >&2; exit 2; }
out=$(mkdir -p "$1" && cd "$1" && pwd)
shift
[ $# -gt 0 ] || set -- r-cran-lme4 r-cran-zoo r-cran-sandwich r-cran-strucchange r-cran-pscl r-cran-party \
    r-cran-quantreg r-cran-vegan r-bioc-limma r-bioc-edger r-cran-flexmix r-cran-kernlab r-cran-rcpp r-cran-coin \
    r-cran-plm r-cran-survival r-cran-e1071 r-cran-mclust r-cran-urca r-cran-mvtnorm r-cran-fields r-cran-spatstat \
    r-cran-ade4 r-cran-adegenet r-bioc-biobase r-cran-lavaan r-cran-robustbase r-cran-vcd r-cran-gam
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cd "$work"
for pkg in "$@"; do
    apt-get download "$pkg" >/dev/null 2>&1 || { echo "skip $pkg (not downloadable)" >&2; continue; }
    rm -rf x && dpkg -x "$pkg"_*.deb x && rm -f "$pkg"_*.deb
    for pdf in x/usr/lib/R/site-library/*/doc/*.pdf x/usr/lib/R/library/*/doc/*.pdf; do
        [ -f "$pdf" ] || continue
        rpkg=$(basename "$(dirname "$(dirname "$pdf")")")
        cp "$pdf" "$out/${rpkg}__$(basename "$pdf")"
    done
done
ls "$out" | wc -l
