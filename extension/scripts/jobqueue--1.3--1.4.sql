/*
 * jobqueue 1.3 -> 1.4: what dashboards and Prometheus read.
 *
 * No table changes.
 */
\echo Use "ALTER EXTENSION jobqueue UPDATE TO '1.4'" to load this file. \quit
