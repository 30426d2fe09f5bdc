# Values from a benchmark's database, sourced by the scripts that read one back.
#
#   sql_value DB SQL    DB a postgres:// or sqlite:// URL; a 16-byte blob (SQLite's UUIDs) is
#                       printed as a UUID
#   sql_values DB SQL   the first column of every row, one a line, the same way

sql_value() { sql_rows "$1" "$2" one; }
sql_values() { sql_rows "$1" "$2" all; }

# DB SQL one|all: on SQLite, `one` reads the first row only, and fails when there is none.
sql_rows() {
  local db=$1 q=$2 which=$3
  if [[ $db == postgres* ]]; then psql "$db" -Atqc "$q"; else
    python3 - "${db#sqlite://}" "$q" "$which" <<'PY'
import sqlite3, sys, uuid
rows = sqlite3.connect(sys.argv[1]).execute(sys.argv[2])
for (v, *_) in ([rows.fetchone()] if sys.argv[3] == "one" else rows):
    print(uuid.UUID(bytes=v) if isinstance(v, bytes) else v)
PY
  fi
}
