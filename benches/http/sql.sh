# One value from a benchmark's database, sourced by the scripts that read one back.
#
#   sql_value DB SQL    DB a postgres:// or sqlite:// URL; a 16-byte blob (SQLite's UUIDs) is
#                       printed as a UUID
#   sql_values DB SQL   the first column of every row, one a line, the same way

sql_value() {
  local db=$1 q=$2
  if [[ $db == postgres* ]]; then psql "$db" -Atqc "$q"; else
    python3 - "${db#sqlite://}" "$q" <<'PY'
import sqlite3, sys, uuid
v = sqlite3.connect(sys.argv[1]).execute(sys.argv[2]).fetchone()[0]
print(uuid.UUID(bytes=v) if isinstance(v, bytes) else v)
PY
  fi
}

sql_values() {
  local db=$1 q=$2
  if [[ $db == postgres* ]]; then psql "$db" -Atqc "$q"; else
    python3 - "${db#sqlite://}" "$q" <<'PY'
import sqlite3, sys, uuid
for (v, *_) in sqlite3.connect(sys.argv[1]).execute(sys.argv[2]):
    print(uuid.UUID(bytes=v) if isinstance(v, bytes) else v)
PY
  fi
}
