#!/bin/sh
# Converts MovieTweetings (ratings.dat user::movie::rating::timestamp, movies.dat
# movie::title (year)::Genre|Genre) into train/valid TSV files for examples/movietweetings/movietweetings.yaml.
#
# Usage: examples/movietweetings/convert.sh DATA_DIR OUT_DIR [MAX_RATINGS]
#   DATA_DIR     folder with ratings.dat and movies.dat (e.g. ../shared/data/movietweetings-100k)
#   OUT_DIR      gets train.tsv and valid.tsv (written to *.tmp, then renamed)
#   MAX_RATINGS  optional: use only the first N lines of ratings.dat (tests)
#
# Rows are sorted by (timestamp, user_id, movie_id); the first 80% are train.tsv, the rest
# valid.tsv (the README's time-ordered split). Columns (tab-separated, with a header):
#   rating  user  movie  genres  ts  decade  history
# rating stays raw (the config binarizes it: label = rating >= 8); genres keeps its '|'
# separators (a multi-valued feature: split('|')), empty when the movie has none; decade is
# the release year's decade from the title ("1990"), empty when the title has no year.
# history is the user's behaviour sequence for DIN (examples/movietweetings/din.yaml): the last
# 20 movies this user rated strictly before this row's timestamp, oldest first, '|'-separated,
# empty for a first rating. Only earlier timestamps count, so a row never sees its own rating or
# a later one (no leak from the future; ratings at the same second do not see each other). It
# is computed over the time-sorted rows before the split, so a validation row's history holds
# the user's training-period ratings, as it would when serving.
# POSIX sh + awk + sort only.
set -eu
if [ $# -lt 2 ] || [ $# -gt 3 ]; then
  echo "usage: $0 DATA_DIR OUT_DIR [MAX_RATINGS]" >&2
  exit 2
fi
in=$1
out=$2
max=${3:-0}
for f in ratings.dat movies.dat; do
  if [ ! -r "$in/$f" ]; then
    echo "$0: cannot read $in/$f" >&2
    exit 1
  fi
done
mkdir -p "$out"
tmp="$out/joined.tmp.$$"
trap 'rm -f "$tmp" "$out/train.tsv.tmp.$$" "$out/valid.tsv.tmp.$$"' EXIT

# Join genres and decade onto the ratings; unknown movies are an error (the README says every
# movie id has a row). Sort numerically by timestamp, then user, then movie.
awk -v max="$max" '
  BEGIN { FS = "::"; OFS = "\t" }
  FNR == NR {
    decade = ""
    if (match($2, /\([0-9][0-9][0-9][0-9]\)$/)) decade = substr($2, RSTART + 1, 3) "0"
    genres[$1] = $3; decades[$1] = decade; next
  }
  max > 0 && FNR > max { exit }
  {
    if (NF != 4) { printf "ratings.dat:%d: expected user::movie::rating::timestamp\n", FNR > "/dev/stderr"; bad = 1; exit 1 }
    if (!($2 in genres)) { printf "ratings.dat:%d: movie %s is not in movies.dat\n", FNR, $2 > "/dev/stderr"; bad = 1; exit 1 }
    print $4, $1, $2, $3, genres[$2], decades[$2]
  }
  END { if (bad) exit 1 }
' "$in/movies.dat" "$in/ratings.dat" | LC_ALL=C sort -t "$(printf '\t')" -k1,1n -k2,2n -k3,3n > "$tmp"

n=$(wc -l < "$tmp")
if [ "$n" -lt 5 ]; then
  echo "$0: only $n ratings; need at least 5 for an 80/20 split" >&2
  exit 1
fi
ntrain=$((n * 8 / 10))
# Reorder to rating, user, movie, genres, ts, decade, history and write the two splits.
awk -v ntrain="$ntrain" -v hlen=20 -v tr="$out/train.tsv.tmp.$$" -v va="$out/valid.tsv.tmp.$$" '
  BEGIN {
    FS = OFS = "\t"
    h = "rating\tuser\tmovie\tgenres\tts\tdecade\thistory"
    print h > tr; print h > va
  }
  {
    u = $2
    # Ratings of u at an earlier second join the history; those at this second stay pending.
    if ((u in pend) && pend_ts[u] != $1) {
      if (hist[u] == "") hist[u] = pend[u]; else hist[u] = hist[u] "|" pend[u]
      n = split(hist[u], a, "|")
      if (n > hlen) { s = a[n - hlen + 1]; for (i = n - hlen + 2; i <= n; i++) s = s "|" a[i]; hist[u] = s }
      delete pend[u]
    }
    line = $4 OFS $2 OFS $3 OFS $5 OFS $1 OFS $6 OFS hist[u]
    if (NR <= ntrain) print line > tr; else print line > va
    if (u in pend) pend[u] = pend[u] "|" $3; else pend[u] = $3
    pend_ts[u] = $1
  }
' "$tmp"
mv "$out/train.tsv.tmp.$$" "$out/train.tsv"
mv "$out/valid.tsv.tmp.$$" "$out/valid.tsv"
echo "$out/train.tsv: $ntrain rows; $out/valid.tsv: $((n - ntrain)) rows"
