"""The glidein table: one Parquet row per finished glidein and one per user job (docs/glidein-table.md)."""
