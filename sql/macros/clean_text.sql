-- clean_text
-- Clean a post or comment text as shared/spec/dataset.md ("Text cleaning", "Privacy") requires: HTML
-- references decoded, markdown links reduced to their text, URLs removed, e-mail addresses and phone
-- numbers masked, whitespace normalised.
-- upstream: html_unescape, strip_markdown_links, strip_urls, mask_email_addresses, mask_phone_numbers,
--     normalise_whitespace
-- Phone numbers are masked after URLs are gone, so that digits inside a URL leave no `[phone]` behind.
-- DuckDB expands a macro's arguments in place and cannot share them inside CASE branches, so a chain of
-- guarded steps that each mention their argument three times would evaluate the first step hundreds of
-- times per row. Each step therefore binds its argument once, as the one element of a list passed to a
-- lambda: `list_transform([text], lambda bound: ...)[1]`.

create or replace macro clean_text(text) as (
    normalise_whitespace(
        mask_phone_numbers(
            mask_email_addresses(
                strip_urls(
                    strip_markdown_links(
                        html_unescape(text)
                    )
                )
            )
        )
    )
);
