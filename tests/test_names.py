"""Rules of what an author name looks like (app.ingest.names)."""
from app.ingest.names import is_name_list, looks_like_name, strip_emails, tidy_names, uncased_script


def test_society_grades_are_no_names():
    assert tidy_names(["Zonghan Wu", "Shirui Pan", "Member", "IEEE", "Fengwen Chen"]) == [
        "Zonghan Wu", "Shirui Pan", "Fengwen Chen"]
    assert tidy_names(["Ann Author", "Senior Member", "IEEE", "Bob Builder", "Fellow", "ACM"]) == [
        "Ann Author", "Bob Builder"]


def test_honorifics_and_bylines_come_off():
    assert tidy_names(["Dr. Ann Author", "by Bob Builder", "Prof Cy Coder"]) == ["Ann Author", "Bob Builder", "Cy Coder"]


def test_affiliation_letters_come_off():
    assert tidy_names(["Ann Author a", "Bob Builder b", "Cy Coder a", "b"]) == ["Ann Author", "Bob Builder", "Cy Coder"]
    assert tidy_names(["Telmo de Menezes e Silva Filho"]) == ["Telmo de Menezes e Silva Filho"]  # inner particles stay


def test_names_in_capitals_read_in_the_usual_case():
    assert tidy_names(["IAN A. KASH", "KEVIN LEYTON-BROWN", "Ivan Vulić"]) == ["Ian A. Kash", "Kevin Leyton-Brown",
                                                                              "Ivan Vulić"]


def test_sentences_dates_and_publication_lines_are_no_names():
    assert not looks_like_name("In a sponsored search auction")
    assert not looks_like_name("We examine trade-offs among stakeholders")
    assert not looks_like_name("November")  # what is left of "27 November, 2022"
    assert looks_like_name("June Huh")  # a month inside a name is a first name
    assert tidy_names(["Conference Paper", "June"], strict=True) is None
    assert tidy_names(["doRNG package", "Version"], strict=True) is None
    assert tidy_names(["Ann Author", "a sentence of text"], strict=True) is None
    assert tidy_names(["Ann Author", "a sentence of text"]) == ["Ann Author"]


def test_names_of_an_uncased_script_only_in_a_paper_of_that_script():
    assert uncased_script("拍卖") and not uncased_script("Auction")
    assert not looks_like_name("屈伟")
    assert looks_like_name("屈伟", uncased_ok=True)
    assert not looks_like_name("本文将讨论一种新的拍卖机制", uncased_ok=True)  # a run of text, not a name


def test_email_addresses_beside_names_come_out():
    assert strip_emails("Paul E. Johnson<pauljohn@example.edu>") == "Paul E. Johnson"
    assert strip_emails("Sonia Tarazona (starazona@example.es)") == "Sonia Tarazona"


def test_stored_author_strings_that_are_no_list_of_names():
    assert is_name_list("Ann Author, Bob Builder")
    assert not is_name_list("In a sponsored search auction, decisions about how to rank ads")
    assert not is_name_list("Conference Paper, June")
