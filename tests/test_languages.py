"""text/languages.py and Fingerprinter(stopwords="language"): each text's language decides its stop words."""

from __future__ import annotations

import pytest

from simhash_index import Fingerprinter, SchemeMismatchError, SimhashIndex
from simhash_index.text.languages import identify, stop_words
from simhash_index.text.stopwords import ALL

BY_LANGUAGE = Fingerprinter(stopwords="language", tf_power=1.0)
BUILTIN = Fingerprinter(stopwords=True, tf_power=1.0)

TEXTS = {
    "fr": "Le serveur enregistre chaque page dans une base de données avant de la comparer avec les autres.",
    "de": "Der Server speichert jede Seite in einer Datenbank, bevor er sie mit den anderen vergleicht.",
    "es": "El servidor guarda cada página en una base de datos antes de compararla con las demás.",
    "pt": "O servidor guarda cada página em uma base de dados antes de compará-la com as outras.",
    "ru": "Сервер сохраняет каждую страницу в базе данных, прежде чем сравнить её с другими.",
    "en": "The server stores every page in a database before it compares it with the others.",
    "ja": "サーバーは各ページをデータベースに保存してから、ほかのページと比較します。",
    "ko": "서버는 각 페이지를 데이터베이스에 저장한 다음 다른 페이지와 비교합니다.",
    "zh": "服务器先把每个页面保存到数据库中，然后再与其他页面进行比较。",
}


@pytest.mark.parametrize("language", sorted(TEXTS))
def test_identifies_the_language(language):
    assert identify(BY_LANGUAGE.normalize(TEXTS[language])) == language


@pytest.mark.parametrize("language", ["fr", "de", "es", "pt", "ru"])
def test_the_languages_function_words_are_no_features(language):
    text = TEXTS[language]
    features = BY_LANGUAGE.features(text)
    dropped = set(BUILTIN.features(text)) - set(features)
    assert dropped, "the built-in English and Chinese lists already removed everything"
    assert all(word in stop_words(language) for word in dropped)
    assert len(features) >= 4  # the content words stay


def test_english_and_chinese_keep_the_builtin_lists():
    assert stop_words("en") == ALL and stop_words("zh") == ALL
    for language in ("en", "zh"):
        assert BY_LANGUAGE.features(TEXTS[language]) == BUILTIN.features(TEXTS[language])
        assert BY_LANGUAGE.fingerprint(TEXTS[language]) == BUILTIN.fingerprint(TEXTS[language])


def test_mixed_page_uses_its_main_language_and_the_builtin_lists():
    # French prose around an English code comment: French is the main language, and English
    # function words go too, as they do on every page
    text = (
        "Pour installer le paquet, lancez la commande suivante dans votre terminal puis vérifiez "
        "que la version affichée est la bonne. Nous utilisons ce script depuis des années et il "
        "fonctionne sur toutes les machines de l'équipe. "
        "# run this from the root of the repository and check the output"
    )
    assert identify(BY_LANGUAGE.normalize(text)) == "fr"
    features = BY_LANGUAGE.features(text)
    assert not {"la", "le", "les", "de", "des", "et", "dans"} & set(features)
    assert not {"the", "this", "from", "and", "of"} & set(features)
    assert {"installer", "paquet", "terminal", "repository", "output"} <= set(features)


def test_a_language_without_a_table_gets_the_builtin_lists():
    assert stop_words("xx") == ALL


def test_scheme_names_the_libraries_and_an_index_refuses_other_fingerprints(tmp_path):
    assert "stop=language:py3langid-" in BY_LANGUAGE.scheme and "wordfreq-" in BY_LANGUAGE.scheme
    assert Fingerprinter(stopwords="language").scheme != Fingerprinter().scheme
    url = f"sqlite:///{tmp_path / 'index.db'}"
    SimhashIndex(url, scheme=Fingerprinter(stopwords="language").scheme).close()
    with pytest.raises(SchemeMismatchError):
        SimhashIndex(url, scheme=Fingerprinter().scheme)


def test_missing_library_names_the_extra(monkeypatch):
    from importlib import metadata

    from simhash_index.text import languages

    installed = metadata.version

    def version(package):
        if package == "py3langid":
            raise metadata.PackageNotFoundError(package)
        return installed(package)

    monkeypatch.setattr(languages.metadata, "version", version)
    with pytest.raises(ImportError, match=r"simhash-index\[languages\]"):
        Fingerprinter(stopwords="language")


@pytest.mark.parametrize("language", ["ja", "ko"])
def test_japanese_and_korean_are_cut_into_character_bigrams(language):
    text = TEXTS[language]
    features = BY_LANGUAGE.features(text)
    assert features == Fingerprinter(stopwords="language", tokenizer="bigrams", tf_power=1.0).features(text)
    assert all(len(feature) <= 2 for feature in features)
    # jieba's Chinese words, or whole space-separated runs, are what the default cuts them into
    assert set(features) != set(BUILTIN.features(text))


def test_a_korean_particle_changes_one_bigram():
    one = "서버는 각 페이지를 데이터베이스에 저장한 다음 다른 페이지와 비교합니다."
    other = one.replace("페이지를", "페이지가")
    assert set(BY_LANGUAGE.features(one)) ^ set(BY_LANGUAGE.features(other)) == {"지를", "지가"}


def test_mixed_japanese_page_cuts_japanese_and_keeps_code_words_whole():
    text = (
        "useState フックを使ってコンポーネントに state 変数を追加します。"
        "ボタンをクリックすると表示が更新されます。"
        "const [index, setIndex] = useState(0); // update the index when the button is clicked"
    )
    assert identify(BY_LANGUAGE.normalize(text)) == "ja"
    features = set(BY_LANGUAGE.features(text))
    assert {"usestate", "setindex", "state", "button", "clicked", "フッ", "変数", "追加"} <= features
    assert not {"the", "when", "フックを使って"} & features


def test_scheme_names_the_bigrams():
    assert BY_LANGUAGE.scheme.split("stop=")[1].split()[0].endswith("+ja,ko:bigrams")
