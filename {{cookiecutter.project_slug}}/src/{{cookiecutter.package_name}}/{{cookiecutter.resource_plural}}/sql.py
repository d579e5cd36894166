"""Every statement of the {{ cookiecutter.resource_plural }} resource.

Constant text with $n parameters: the text never changes, so asyncpg's statement cache hits and
PostgreSQL plans each statement once per connection.
"""

COLUMNS = "id, name, description, price_cents, quantity, created_at, updated_at, version"

# Reads and writes answer with the JSON body built by PostgreSQL (`row_to_json(...)::text`),
# passed through as bytes: no record decoding, no dict, no encoder in Python. CPU per request
# (the template's hot-path benchmark, median us: response_model / orjson / PostgreSQL JSON):
# by-id 61/52/49, create 51-74/62-75/59-64, patch 55-70/53-65/54-56 (ties within noise), page
# 244/169/67.
INSERT = f"""
    WITH new AS (
        INSERT INTO {{ cookiecutter.resource_plural }} (name, description, price_cents, quantity)
        VALUES ($1, $2, $3, $4)
        RETURNING {COLUMNS}
    )
    SELECT id, version, row_to_json(new)::text AS body FROM new
"""

SELECT_BY_ID = f"""
    SELECT version, row_to_json(one)::text AS body
      FROM (SELECT {COLUMNS} FROM {{ cookiecutter.resource_plural }} WHERE id = $1) AS one
"""

# Keyset pagination: WHERE id > $1 walks the primary-key index, so page 5,000 costs what page 1
# does. The whole page document, next_after included, is built by PostgreSQL: the largest saving
# of all (169 -> 67 us per 20-row page).
SELECT_PAGE = f"""
    WITH page AS (
        SELECT {COLUMNS}
          FROM {{ cookiecutter.resource_plural }}
         WHERE id > $1
         ORDER BY id
         LIMIT $2
    ), last AS (
        SELECT max(id) AS id FROM page
    )
    SELECT json_build_object(
               'data', coalesce((SELECT json_agg(page ORDER BY page.id) FROM page), '[]'),
               'next_after', (SELECT last.id FROM last
                               WHERE EXISTS (SELECT FROM {{ cookiecutter.resource_plural }} WHERE id > last.id))
           )::text
"""

# One statement for every PATCH: omitted fields keep their value ($3 says whether description,
# the one nullable field, was sent). $7 is the versions If-Match names (an empty array when it names
# none the service could have issued), or NULL for an unconditional update.
UPDATE = f"""
    WITH changed AS (
        UPDATE {{ cookiecutter.resource_plural }}
           SET name        = COALESCE($2, name),
               description = CASE WHEN $3::boolean THEN $4 ELSE description END,
               price_cents = COALESCE($5, price_cents),
               quantity    = COALESCE($6, quantity),
               version     = version + 1,
               updated_at  = now()
         WHERE id = $1
           AND ($7::bigint[] IS NULL OR version = ANY($7::bigint[]))
        RETURNING {COLUMNS}
    )
    SELECT version, row_to_json(changed)::text AS body FROM changed
"""

SELECT_VERSION = """
    SELECT version
      FROM {{ cookiecutter.resource_plural }}
     WHERE id = $1
"""

# $2 as in UPDATE: the If-Match versions, or NULL.
DELETE = """
    DELETE FROM {{ cookiecutter.resource_plural }}
     WHERE id = $1
       AND ($2::bigint[] IS NULL OR version = ANY($2::bigint[]))
    RETURNING id
"""
