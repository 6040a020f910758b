"""Dump records of posts and comments, and the lines that encode them."""

import functools
import json
import random
import zlib

import orjson

from tasks.synth.eras import Era, era_of
from tasks.synth.forge import Comment, Post
from tasks.synth.ids import base36
from tasks.synth.people import FLAIRS_BY_ROLE

_MALFORMED_RATE = 1 / 20_000
_DUPLICATE_RATE = 1 / 2_000
_DESIGNED_DUPLICATE_RATE = 1 / 100  # so that small runs duplicate some lines that decide outcomes
_ASCII_ESCAPED_SHARE = 0.03
_SCORES = (*[1] * 30, *[2] * 15, *[3] * 10, 4, 4, 5, 5, 6, 7, 8, 10, 12, 15, 21, 34, 55, 0, 0, -1, -2, -5)
_IMAGE_HOSTS = ("i.redd.it", "i.imgur.com", "imgur.com")
_LINK_HOSTS = ("nytimes.com", "cdc.gov", "bbc.co.uk", "statnews.com")
_EMOJI_PIECE = {
    "a": ":stethoscope:",
    "e": "emoji",
    "u": "https://emoji.redditmedia.com/46kel8lf1guz/stethoscope",
}
_FLAIR_CSS = {flair: role for role, flairs in FLAIRS_BY_ROLE.items() for flair in flairs}


def _fullname(prefix: str, name: str) -> str:
    return prefix + base36(zlib.crc32(name.encode()) + 36**5)


@functools.cache
def _subreddit_id(name: str) -> str:
    return "t5_2xtuc" if name.lower() == "askdocs" else _fullname("t5_", name.lower())


class Renderer:
    """Dump records of posts and comments with the fields and types of their month (pushshift-format.md,
    section 2). Drift within a month is drawn per record from the stream's own random numbers."""

    def __init__(self, rng: random.Random) -> None:
        self.rng = rng

    def submission(self, post: Post) -> dict:
        rng, era = self.rng, era_of(post.created)
        record = self._author(post.author, post.flair, era, era.submission_richtext)
        permalink = f"/r/{post.subreddit}/comments/{post.id}/{post.slug}/"
        record |= {
            "created_utc": self._created(post.created, era), "distinguished": post.distinguished,
            "domain": f"self.{post.subreddit}",
            "edited": self._edited(post.created, era.submission_float_edited), "gilded": 0, "id": post.id,
            "is_self": post.kind == "self", "link_flair_css_class": None,
            "link_flair_text": post.link_flair if post.num_comments else None, "media": None,
            "media_embed": {}, "num_comments": post.num_comments, "over_18": False, "permalink": permalink,
            "quarantine": False, "score": rng.choice(_SCORES), "secure_media": None, "secure_media_embed": {},
            "selftext": post.selftext, "stickied": post.distinguished is not None,
            "subreddit": self._subreddit(post.subreddit), "subreddit_id": _subreddit_id(post.subreddit),
            "thumbnail": "self" if post.kind == "self" else "default", "title": post.title,
            "url": f"https://www.reddit.com{permalink}",
        }  # fmt: skip
        if post.selftext is None:
            del record["selftext"]
        self._media(record, post, era)
        if era.removed_by_category:
            record["removed_by_category"] = post.removed_by_category
        if era.upvote_ratio:
            record["upvote_ratio"] = round(rng.uniform(0.5, 1.0), 2)
        if era.submission_created:
            record["created"] = post.created + 28800  # not UTC: pushshift-format.md 2.3
        self._retrieved(record, post.created, era.submission_retrieved, era)
        return record

    def comment(self, comment: Comment) -> dict:
        era, post = era_of(comment.created), comment.post
        record = self._author(comment.author, comment.flair, era, era.comment_richtext)
        record |= {
            "body": comment.body, "controversiality": 0, "created_utc": self._created(comment.created, era),
            "distinguished": comment.distinguished,
            "edited": self._edited(comment.created, era.comment_float_edited), "gilded": 0, "id": comment.id,
            "link_id": f"t3_{post.id}",
            "parent_id": f"t1_{comment.parent.id}" if comment.parent else f"t3_{post.id}",
            "score": self.rng.choice(_SCORES), "subreddit": self._subreddit(post.subreddit),
            "subreddit_id": _subreddit_id(post.subreddit),
        }  # fmt: skip
        if era.comment_stickied:
            record["stickied"] = comment.stickied
        if era.is_submitter:
            record["is_submitter"] = comment.author == post.op
        if era.comment_permalink:
            record["permalink"] = f"/r/{post.subreddit}/comments/{post.id}/{post.slug}/{comment.id}/"
        if era.comment_name:
            record["name"] = f"t1_{comment.id}"
        self._retrieved(record, comment.created, era.comment_retrieved, era)
        return record

    def _subreddit(self, name: str) -> str:
        return name.lower() if self.rng.random() < 0.005 else name  # matching is case-insensitive

    def _author(self, author: str, flair: str | None, era: Era, richtext: bool) -> dict:
        record: dict = {"author": author}
        self._flair(record, flair, richtext and author != "[deleted]" and self.rng.random() < 0.9)
        if era.author_fullname and author != "[deleted]":
            record["author_fullname"] = _fullname("t2_", author)
        return record

    def _flair(self, record: dict, flair: str | None, richtext: bool) -> None:
        """Flair as text only, or also as richtext pieces: sometimes after an emoji piece, sometimes
        with `author_flair_text` left null."""
        css = _FLAIR_CSS.get(flair) if flair else None
        if not richtext:
            record |= {"author_flair_css_class": css, "author_flair_text": flair}
        elif flair is None or self.rng.random() < 0.3:
            record |= {"author_flair_css_class": css, "author_flair_richtext": [], "author_flair_text": flair,
                       "author_flair_type": "text"}  # fmt: skip
        else:
            pieces = [{"e": "text", "t": flair}]
            if self.rng.random() < 0.15:
                pieces.insert(0, _EMOJI_PIECE)
            shown = None if self.rng.random() < 0.1 else flair
            record |= {"author_flair_css_class": css, "author_flair_richtext": pieces,
                       "author_flair_text": shown, "author_flair_type": "richtext"}  # fmt: skip

    def _created(self, created: int, era: Era) -> int | str | float:
        draw = self.rng.random()
        if draw < era.string_created:
            return str(created)
        return float(created) if draw > 0.998 else created  # API-style floats, now and then

    def _edited(self, created: int, floats: bool) -> bool | int | float:
        if self.rng.random() < 0.92:
            return False
        edited = created + self.rng.randint(60, 3 * 86400)
        return float(edited) if floats and self.rng.random() < 0.5 else edited

    def _retrieved(self, record: dict, created: int, names: tuple[str, ...], era: Era) -> None:
        retrieved = created + era.retrieval_lag_days * 86400 + self.rng.randrange(7 * 86400)
        for name in names:
            record[name] = retrieved
        if era.meta:
            record["_meta"] = {"retrieved_2nd_on": created + 129600}

    def _media(self, record: dict, post: Post, era: Era) -> None:
        rng, token = self.rng, base36(self.rng.randrange(36**12, 36**13))
        if era.is_video:
            record["is_video"] = post.kind == "video"
        if post.kind == "self" and rng.random() < 0.4:
            record["post_hint"] = "self"
        elif post.kind == "image":
            host = rng.choice(_IMAGE_HOSTS)
            record |= {"domain": host, "url": f"https://{host}/{token}.jpg"}
            if rng.random() < 0.7:
                source = {"url": f"https://preview.redd.it/{token}.jpg?auto=webp&amp;s={token[:8]}",
                          "width": 1080, "height": 1350}  # fmt: skip
                record |= {"post_hint": "image", "preview": {"enabled": True, "images": [{"source": source}]}}
        elif post.kind == "gallery":
            items = [token[i : i + 6] for i in range(0, 12, 4)]
            record |= {
                "domain": "reddit.com", "url": f"https://www.reddit.com/gallery/{post.id}",
                "is_gallery": True,
                "gallery_data": {"items": [{"media_id": item, "id": i} for i, item in enumerate(items)]},
                "media_metadata": {item: {"status": "valid", "e": "Image", "m": "image/jpg"}
                                   for item in items},
            }  # fmt: skip
        elif post.kind == "video":
            record |= {
                "domain": "v.redd.it",
                "url": f"https://v.redd.it/{token}",
                "post_hint": "hosted:video",
            }
        elif post.kind == "link":
            host = rng.choice(_LINK_HOSTS)
            record |= {
                "domain": host,
                "url": f"https://www.{host}/health/{post.slug}.html",
                "post_hint": "link",
            }


class Encoder:
    """Dump lines: mostly raw UTF-8 JSON, some ASCII-escaped with sorted keys (re-ingested records),
    keys sorted from 2023-04 (Arctic Shift); now and then a duplicate re-ingest or a broken line. Only
    inert records are broken, so that no designed outcome depends on how a reader copes."""

    def __init__(self, rng: random.Random) -> None:
        self.rng = rng

    def lines(self, record: dict, *, created: int, inert: bool) -> list[bytes]:
        rng, sort = self.rng, era_of(created).sorted_keys
        if inert and rng.random() < _MALFORMED_RATE:
            return self._malformed(record)
        lines = [self._dump(record, sort)]
        if rng.random() < (_DUPLICATE_RATE if inert else _DESIGNED_DUPLICATE_RATE):
            again = dict(record, score=record["score"] + rng.randint(1, 40))
            for name in ("retrieved_on", "retrieved_utc"):
                if name in again:
                    again[name] += rng.randint(86400, 90 * 86400)
            lines.append(self._dump(again, sort))
        return lines

    def _dump(self, record: dict, sort: bool) -> bytes:
        if self.rng.random() < _ASCII_ESCAPED_SHARE:
            return json.dumps(record, sort_keys=True).encode("ascii")
        return orjson.dumps(record, option=orjson.OPT_SORT_KEYS if sort else 0)

    def _malformed(self, record: dict) -> list[bytes]:
        line = orjson.dumps(record)
        kind = self.rng.randrange(4)
        if kind == 0:  # cut short, as by an interrupted write
            return [line[: self.rng.randrange(1, len(line) - 1)]]
        if kind == 1:  # bytes that are not UTF-8, inside a string (compact JSON has spaces only there)
            return [line.replace(b" ", b" \xff\xfe ", 1) if b" " in line else line[:-2]]
        if kind == 2:
            return [orjson.dumps({key: value for key, value in record.items() if key != "id"})]
        return [b"", line]
