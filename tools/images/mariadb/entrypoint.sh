#!/bin/bash
# Entrypoint of the mariadb-db image (tools/images/build.sh): Debian's MariaDB server.
# First start: mariadb-install-db in $MARIADB_DATADIR (default /var/lib/mysql, meant to be a volume),
# then the superuser `root` gets the password $MARIADB_ROOT_PASSWORD (required then; later starts
# keep the database's password) for logins from anywhere (root@'%', as Bitnami's chart makes it);
# the password-less root@127.0.0.1, ::1 and @<hostname> that mariadb-install-db makes are removed.
# Then the server runs in the foreground as the mysql user (uid 999), listening on 0.0.0.0:3306;
# arguments go to `mariadbd` (e.g. --max-connections=50). No configuration file is read
# (--no-defaults): Debian's my.cnf is made by maintainer scripts, which do not run in the image.
set -euo pipefail
datadir="${MARIADB_DATADIR:-/var/lib/mysql}"

if [[ $(id -u) == 0 ]]; then
  mkdir -p "$datadir" /run/mysqld
  # A fresh volume is root's: hand it (and what a previous uid left in it) to mysql.
  find "$datadir" /run/mysqld \! -user mysql -exec chown mysql:mysql {} +
  chmod 700 "$datadir"
  exec setpriv --reuid=mysql --regid=mysql --init-groups "$0" "$@"
fi

server=(mariadbd --no-defaults --datadir="$datadir" --socket=/run/mysqld/mysqld.sock
  --port=3306 --bind-address=0.0.0.0 --skip-name-resolve)
if [[ ! -d "$datadir/mysql" ]]; then
  if [[ -z "${MARIADB_ROOT_PASSWORD:-}" ]]; then
    echo "mariadb-db: $datadir has no database yet: set MARIADB_ROOT_PASSWORD (the password of root)" >&2
    exit 1
  fi
  mariadb-install-db --no-defaults --datadir="$datadir" --auth-root-authentication-method=normal \
    --skip-test-db --skip-name-resolve --force >/dev/null
  pw="${MARIADB_ROOT_PASSWORD//\\/\\\\}"
  pw="${pw//\'/\\\'}"
  # The server runs this before it accepts connections (a start killed before that leaves root
  # without a password: remove the volume's contents to start over).
  cat >/run/mysqld/init.sql <<SQL
DELETE FROM mysql.global_priv WHERE User = 'root' AND Host NOT IN ('localhost', '%');
ALTER USER 'root'@'localhost' IDENTIFIED BY '$pw';
CREATE USER 'root'@'%' IDENTIFIED BY '$pw';
GRANT ALL PRIVILEGES ON *.* TO 'root'@'%' WITH GRANT OPTION;
FLUSH PRIVILEGES;
SQL
  server+=(--init-file=/run/mysqld/init.sql)
fi

exec "${server[@]}" "$@"
