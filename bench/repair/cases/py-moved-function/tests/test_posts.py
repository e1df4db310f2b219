from blog.posts import Post, archive_pages


def test_post_url_is_slugified():
    assert Post("Hello, World!", "").url == "/posts/hello-world/"


def test_archive_pages():
    posts = [Post(f"Post {i}", "") for i in range(3)]
    assert archive_pages(posts, per_page=2) == [["/posts/post-0/", "/posts/post-1/"], ["/posts/post-2/"]]
