"""The alignment's weights, per matched or skipped character of a name's alphanumeric
form: rank.py passes them to the kernel (kernel.c), which aligns, when a query process
opens its index. No index reads them, so a change here indexes nothing."""

BASE = 1.0  # every matched character
BONUS_FIRST = 3.0  # the name's first character
BONUS_WORD = 2.5  # a word start: after a separator, at a camel hump, after digits
BONUS_CONSEC = 2.5  # a character right after the previous match: runs are how words are typed
BONUS_END = 1.0  # the last query character is the name's last: a whole last word typed
GAP_OPEN = 1.0  # each jump over skipped characters
VOWEL_HOP = 0.5  # a hop over a vowel inside a run, per vowel
TAIL_JUMP = 0.75  # a jump to a word start over the rest of the current word only
SKIP_WORD = 0.75  # ... plus this much per whole word it skips
SKIP_VOWEL = 0.15  # skipping a vowel is cheap: abbreviations drop them
SKIP_OTHER = 0.5
SKIP_LEAD = 1.0  # factor on the cost of characters before the first match
SKIP_TRAIL = 0.05  # factor on the cost of characters after the last match
TRAIL_WORD = 0.5  # each whole word after the last match
STAR_FACTOR = 0.05  # factor on the cost of characters a glob `*` swallows
NEG = -1e9  # an impossible cell
