"""The one progress report long commands share: a bar on a terminal, lines elsewhere."""

import io

from service.commands.progress import Progress


class Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_on_a_terminal_the_bar_is_redrawn_in_place_and_ends_with_a_line():
    screen = Terminal()
    progress = Progress("replay", 4, screen)
    progress.update(1, "1 replayed")
    progress.update(4, "4 replayed")
    progress.finish("4 replayed")
    assert screen.getvalue() == (
        "\r[#######.......................]   25% 1 replayed"
        "\r[##############################]  100% 4 replayed"
        "\nreplay: done, 4 replayed\n")


def test_elsewhere_it_prints_a_line_at_most_every_few_seconds():
    log = io.StringIO()
    clock = iter([100.0, 100.5, 103.0])
    progress = Progress("backfill", stream=log, clock=lambda: next(clock))
    progress.update(10, "10/40 webhooks", total=40)  # first line at once
    progress.update(20, "20/40 webhooks")  # half a second later: no line
    progress.update(30, "30/40 webhooks")  # three seconds later: a line
    progress.finish("40 deliveries")
    assert log.getvalue().splitlines() == [
        "backfill: 25% 10/40 webhooks", "backfill: 75% 30/40 webhooks",
        "backfill: done, 40 deliveries"]


def test_work_of_unknown_or_zero_size_reads_as_complete_not_as_a_division_error():
    screen = Terminal()
    Progress("replay", 0, screen).update(0, "nothing to do")
    assert "100% nothing to do" in screen.getvalue()
