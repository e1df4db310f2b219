#!/bin/sh
# The database role ARCS connects as. The official PostgreSQL image runs this once, when it creates
# an empty data folder (/docker-entrypoint-initdb.d); compose.yaml and the Kubernetes manifests
# mount it there. POSTGRES_USER (a superuser) is for administration only; ARCS gets APP_DB_USER:
# a LOGIN role that owns the APP_DB_NAME database, so it can create and migrate its own tables,
# and holds nothing else: not SUPERUSER, CREATEDB, CREATEROLE, REPLICATION or BYPASSRLS. Without a
# superuser ARCS cannot read server files (COPY ... FROM PROGRAM/FILE), create roles or touch other
# databases, whoever gets hold of its password.
#
#   APP_DB_PASSWORD   required; the password inside ARCS_DATABASE_URL
#   APP_DB_USER       default arcs
#   APP_DB_NAME       default arcs
set -eu
: "${APP_DB_PASSWORD:?set APP_DB_PASSWORD: the password of the role ARCS connects as}"
APP_DB_USER="${APP_DB_USER:-arcs}"
APP_DB_NAME="${APP_DB_NAME:-arcs}"

psql -v ON_ERROR_STOP=1 --no-psqlrc --username "${POSTGRES_USER:-postgres}" --dbname "${POSTGRES_DB:-postgres}" \
  --set=app_user="$APP_DB_USER" --set=app_password="$APP_DB_PASSWORD" --set=app_db="$APP_DB_NAME" <<'SQL'
CREATE ROLE :"app_user" LOGIN PASSWORD :'app_password'
  NOSUPERUSER NOCREATEDB NOCREATEROLE NOREPLICATION NOBYPASSRLS;
CREATE DATABASE :"app_db" OWNER :"app_user";
REVOKE ALL ON DATABASE :"app_db" FROM PUBLIC;
GRANT CONNECT, TEMPORARY ON DATABASE :"app_db" TO :"app_user";
\connect :"app_db"
-- PostgreSQL 15+ already keeps others out of the public schema; say so for older servers too.
REVOKE CREATE ON SCHEMA public FROM PUBLIC;
ALTER SCHEMA public OWNER TO :"app_user";
SQL
